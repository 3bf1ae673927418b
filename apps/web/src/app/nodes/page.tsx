import { NodesTable } from "~/components/nodes-table";

export const dynamic = "force-dynamic";

export default function NodesPage() {
  return (
    <main>
      <h1>Nodes</h1>
      <NodesTable />
    </main>
  );
}
