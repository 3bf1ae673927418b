import { IncidentDetail } from "~/components/incidents";

export const dynamic = "force-dynamic";

export default async function IncidentPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  return (
    <main>
      <IncidentDetail id={Number(id)} />
    </main>
  );
}
