import { Fleet } from "~/components/fleet";

export const dynamic = "force-dynamic";

type Params = Record<string, string | string[] | undefined>;

export default async function ClustersPage({ searchParams }: { searchParams: Promise<Params> }) {
  const asked = (await searchParams).cluster;
  return (
    <main>
      <h1>All clusters</h1>
      <Fleet initialCluster={typeof asked === "string" ? asked : null} />
    </main>
  );
}
