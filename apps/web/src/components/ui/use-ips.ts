"use client";

import { useEffect, useMemo, useState } from "react";
import { useSubscription } from "@trpc/tanstack-react-query";
import { useTRPC } from "~/trpc/react";
import { ipOrderKey } from "@whohas/core/addr";
import { SNAPSHOT_URL } from "./urls";

import type { Ip } from "./ips-view";

/**
 * useIps keeps every IP the hub knows, live: the subscription sends the whole list once, then only the IPs that
 * changed, which are merged here (5,000 IPs with 50 changes a second cost the browser a few changed rows, not a
 * new list, each second).
 */
export function useIps(): { data: Ip[] | undefined; error: string | null } {
  const trpc = useTRPC();
  const [byIp, setByIp] = useState<Map<string, Ip> | null>(null);
  const [from, setFrom] = useState<string | null>(null);
  const [failed, setFailed] = useState<string | null>(null);
  useEffect(() => {
    let gone = false;
    // Same URL as the page's preload: the browser answers from the download already under way.
    fetch(SNAPSHOT_URL)
      .then(async (r) => {
        if (!r.ok) throw new Error(`HTTP ${r.status}`);
        return ((await r.json()) as { result: { data: { id: string; rows: Ip[] } } }).result.data;
      })
      .then(
        (snap) => {
          if (gone) return;
          setByIp(new Map(snap.rows.map((r) => [r.ip, r])));
          setFrom(snap.id);
        },
        (e: unknown) => {
          // Without the snapshot the subscription starts from nothing and sends the whole list itself.
          if (!gone) {
            setFailed((e as Error).message);
            setFrom("");
          }
        },
      );
    return () => {
      gone = true;
    };
  }, []);
  const sub = useSubscription(
    trpc.ips.live.subscriptionOptions(from === null || from === "" ? undefined : { lastEventId: from }, {
      enabled: from !== null,
      onData: (ev) =>
        setByIp((prev) => {
          const next = ev.data.full || prev === null ? new Map<string, Ip>() : new Map(prev);
          for (const ip of ev.data.ips) next.set(ip.ip, ip);
          return next;
        }),
    }),
  );
  const data = useMemo(
    () =>
      byIp === null
        ? undefined
        : [...byIp.values()]
            .map((v) => [ipOrderKey(v.ip), v] as const)
            .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
            .map(([, v]) => v),
    [byIp],
  );
  return { data, error: byIp === null ? (sub.status === "error" ? sub.error.message : failed) : null };
}
