"use client";

import { useEffect, useMemo, useState } from "react";
import { useSubscription } from "@trpc/tanstack-react-query";
import { useTRPC } from "~/trpc/react";
import { SNAPSHOT_URL } from "./urls";

import type { Ip } from "./ips-view";

/**
 * ipKey orders addresses numerically, IPv4 before IPv6, as core's compareIP does on the hub; written again here
 * because importing @whohas/core into the browser bundle would bring its wire schemas and YAML parser with it.
 */
function ipKey(ip: string): string {
  if (!ip.includes(":")) return `4${ip.split(".").map((o) => o.padStart(3, "0")).join("")}`;
  const [head = "", tail = ""] = ip.split("::");
  const h = head === "" ? [] : head.split(":");
  const t = tail === "" ? [] : tail.split(":");
  const groups = ip.includes("::") ? [...h, ...Array<string>(8 - h.length - t.length).fill("0"), ...t] : h;
  return `6${groups.map((g) => g.padStart(4, "0")).join("")}`;
}

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
  const data = useMemo(() => (byIp === null ? undefined : [...byIp.values()].map((v) => [ipKey(v.ip), v] as const).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([, v]) => v)), [byIp]);
  return { data, error: byIp === null ? (sub.status === "error" ? sub.error.message : failed) : null };
}
