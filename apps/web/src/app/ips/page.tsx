import { Suspense } from "react";
import { IpsTable } from "~/components/ips-table";
import { Skeleton } from "~/components/ui/states";

export const dynamic = "force-dynamic";

export default function IpsPage() {
  return (
    <main>
      <h1>LoadBalancer IPs</h1>
      <Suspense fallback={<Skeleton rows={8} />}>
        <IpsTable />
      </Suspense>
    </main>
  );
}
