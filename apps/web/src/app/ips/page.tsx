import { Suspense } from "react";
import { IpsTable, type FirstScreen } from "~/components/ips-table";
import { FIRST_SCREEN, ipsQuery, viewRows } from "~/components/ui/ips-view";
import { Skeleton } from "~/components/ui/states";
import { preload } from "react-dom";
import { SNAPSHOT_URL } from "~/components/ui/urls";
import { registeredHub } from "~/server/registry";

export const dynamic = "force-dynamic";

type Params = Record<string, string | string[] | undefined>;

/** firstScreen is the first rows of the view the URL asks for, from the hub in this process (null at build time). */
function firstScreen(params: Params): FirstScreen | null {
  const hub = registeredHub();
  if (hub === null) return null;
  const all = hub.listSnapshot().rows;
  const rows = viewRows(
    all,
    ipsQuery((k) => {
      const v = params[k];
      return Array.isArray(v) ? v[0] : v;
    }),
  );
  return { rows: rows.slice(0, FIRST_SCREEN), matched: rows.length, total: all.length };
}

export default async function IpsPage({ searchParams }: { searchParams: Promise<Params> }) {
  // The whole list starts downloading with the page, while the scripts load; the table takes it over when it
  // hydrates. Meanwhile the HTML already holds the first screen of rows.
  preload(SNAPSHOT_URL, { as: "fetch", crossOrigin: "anonymous" });
  const initial = firstScreen(await searchParams);
  return (
    <main>
      <h1>LoadBalancer IPs</h1>
      <Suspense fallback={<Skeleton rows={8} />}>
        <IpsTable initial={initial} />
      </Suspense>
    </main>
  );
}
