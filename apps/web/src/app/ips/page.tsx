import { Suspense } from "react";
import { IpsTable } from "~/components/ips-table";
import { Skeleton } from "~/components/ui/states";
import { preload } from "react-dom";
import { SNAPSHOT_URL } from "~/components/ui/urls";

export const dynamic = "force-dynamic";

export default function IpsPage() {
  // The list starts downloading with the page, while the scripts load; the table picks it up when it hydrates.
  preload(SNAPSHOT_URL, { as: "fetch", crossOrigin: "anonymous" });
  return (
    <main>
      <h1>LoadBalancer IPs</h1>
      <Suspense fallback={<Skeleton rows={8} />}>
        <IpsTable />
      </Suspense>
    </main>
  );
}
