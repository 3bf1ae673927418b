"use client";

import { useRef, useState } from "react";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useTRPC } from "~/trpc/react";
import { AnnouncedTable } from "./announced";
import { openConfirm } from "./ui/confirm";
import { ConfirmDialog } from "./ui/confirm-dialog";
import { useCan } from "./ui/session";

type Group = { service: { namespace: string; name: string } } | { pool: string };

const groupName = (g: Group) => ("pool" in g ? `pool ${g.pool}` : `Service ${g.service.namespace}/${g.service.name}`);

/**
 * GroupAnnounce re-announces every IP of this IP's Services and pool at once, each from its own expected owner: after
 * a failover or a fix, every client of the Service (and every router of the pool) learns the right MACs, not only
 * those of the IP on screen. Only for IPs announced over ARP/NDP.
 */
export function GroupAnnounce({
  services,
  pool,
}: {
  services: readonly { readonly namespace: string; readonly name: string }[];
  pool: string | null;
}) {
  const groups: Group[] = [
    ...services.map((s) => ({ service: { namespace: s.namespace, name: s.name } })),
    ...(pool === null ? [] : [{ pool }]),
  ];
  if (groups.length === 0) return null;
  return (
    <section aria-labelledby="group-announce-h">
      <h2 id="group-announce-h">Re-announce together</h2>
      {groups.map((g) => (
        <GroupRow key={groupName(g)} group={g} />
      ))}
    </section>
  );
}

function GroupRow({ group }: { group: Group }) {
  const trpc = useTRPC();
  const can = useCan("operator");
  const confirmRef = useRef<HTMLDialogElement>(null);
  /** The batch this page asked for: polled fast until it shows. */
  const [watching, setWatching] = useState<string | null>(null);
  const latest = useQuery({
    ...trpc.actions.announceGroupLatest.queryOptions(group),
    refetchInterval: (q) => {
      const b = q.state.data;
      // Once a second while one runs (or the one asked for here is not shown yet), else now and then (someone else may
      // start one).
      if (b?.endedAt === null || (watching !== null && b?.id !== watching)) return 1000;
      return 15_000;
    },
  });
  const start = useMutation(
    trpc.actions.reannounceGroup.mutationOptions({
      onSuccess: (b) => {
        setWatching(b.id);
        void latest.refetch();
      },
    }),
  );
  const batch = latest.data ?? null;
  const running = batch !== null && batch.endedAt === null;
  const name = groupName(group);
  const finished = batch?.ips.filter((a) => a.state !== "waiting" && a.state !== "announcing").length ?? 0;
  const ok = batch?.ips.filter((a) => a.state === "ok").length ?? 0;
  return (
    <div data-testid="group-announce" data-group={name}>
      <div className="actions">
        <button
          type="button"
          disabled={!can || running || start.isPending}
          title={can ? `every IP of ${name}, each from its expected owner` : "needs the operator role"}
          onClick={() => openConfirm(confirmRef.current)}
          data-testid="reannounce-group"
        >
          {running ? `Announcing ${name}: ${finished} of ${batch.ips.length}…` : `Re-announce every IP of ${name}`}
        </button>
        {start.error !== null && (
          <span className="bad-text" role="alert">
            Re-announce refused: {start.error.message}
          </span>
        )}
      </div>
      <ConfirmDialog
        dialogRef={confirmRef}
        title={`Announce every IP of ${name}?`}
        action="Announce"
        testId="confirm-reannounce-group"
        onConfirm={() => start.mutate(group)}
      >
        Each IP&apos;s expected owner sends MetalLB&apos;s gratuitous ARP/NA for it for a few seconds, a few IPs at a time. IPs whose owner
        whohas does not know are left alone: whohas never announces from another node.
      </ConfirmDialog>
      {batch === null ? null : (
        <AnnouncedTable
          rows={batch.ips}
          caption={`${name}: re-announced by ${batch.by}${running ? "" : `: ${ok} of ${batch.ips.length} announced`}`}
        />
      )}
    </div>
  );
}
