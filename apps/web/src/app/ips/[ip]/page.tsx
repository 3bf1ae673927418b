import { IpDetail } from "~/components/ip-detail";

export const dynamic = "force-dynamic";

export default async function IpPage({ params }: { params: Promise<{ ip: string }> }) {
  const { ip } = await params;
  return (
    <main>
      <IpDetail ip={decodeURIComponent(ip)} />
    </main>
  );
}
