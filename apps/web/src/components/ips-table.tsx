"use client";

import Link from "next/link";
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import { useMemo, useRef, useState, type UIEvent } from "react";
import { useIps, type Ip } from "./ui/use-ips";
import { Empty, Failure, Skeleton } from "./ui/states";
import { Ago } from "./ui/time";


const STATE_TEXT: Record<Ip["state"], string> = { "multi-responder": "several responders", "no-responder": "no responder", single: "one responder", idle: "idle" };
const STATE_RANK: Record<Ip["state"], number> = { "multi-responder": 0, "no-responder": 1, single: 2, idle: 3 };
/** ROW_PX: every row has the same height, so only the rows in view are rendered (5,000 IPs stay smooth). */
const ROW_PX = 56;
const OVERSCAN = 8;

type SortKey = "ip" | "state" | "service" | "owner" | "responders" | "requests";
const SORTS: Record<SortKey, (a: Ip, b: Ip) => number> = {
  ip: () => 0, // the hub sends IPs in numeric order already
  state: (a, b) => STATE_RANK[a.state] - STATE_RANK[b.state],
  service: (a, b) => (a.services[0]?.name ?? "~").localeCompare(b.services[0]?.name ?? "~"),
  owner: (a, b) => (a.expectedOwner?.node ?? "~").localeCompare(b.expectedOwner?.node ?? "~"),
  responders: (a, b) => b.responders.filter((r) => r.answering).length - a.responders.filter((r) => r.answering).length,
  requests: (a, b) => b.requests - a.requests,
};
const COLUMNS: { key: SortKey | null; label: string }[] = [
  { key: "ip", label: "IP" },
  { key: "service", label: "Service" },
  { key: null, label: "ETP" },
  { key: "owner", label: "Expected owner" },
  { key: "state", label: "State" },
  { key: "responders", label: "Answering" },
  { key: null, label: "Usually first" },
  { key: null, label: "Announced" },
  { key: null, label: "Findings" },
  { key: "requests", label: "Requests" },
];

function matches(ip: Ip, q: string): boolean {
  if (q === "") return true;
  const hay = [ip.ip, ...ip.services.map((s) => `${s.namespace}/${s.name}`), ip.expectedOwner?.node ?? "", ...ip.responders.flatMap((r) => [r.mac, r.node ?? ""]), ...ip.findings.map((f) => f.type)];
  return hay.some((h) => h.toLowerCase().includes(q));
}

/** IpsTable lists every IP with sort, filter and search kept in the URL, so a filtered view can be shared as a link. */
export function IpsTable() {
  const ips = useIps();
  const params = useSearchParams();
  const router = useRouter();
  const path = usePathname();
  const q = params.get("q") ?? "";
  const state = params.get("state") ?? "";
  const finding = params.get("finding") ?? "";
  const sortParam = params.get("sort") ?? "ip";
  const sort: SortKey = Object.hasOwn(SORTS, sortParam) ? (sortParam as SortKey) : "ip";
  const desc = params.get("dir") === "desc";
  const set = (changes: Record<string, string>) => {
    const next = new URLSearchParams(params.toString());
    for (const [key, value] of Object.entries(changes)) {
      if (value === "") next.delete(key);
      else next.set(key, value);
    }
    router.replace(`${path}${next.size > 0 ? `?${next.toString()}` : ""}`, { scroll: false });
  };
  const rows = useMemo(() => {
    const list = (ips.data ?? []).filter((i) => (state === "" || i.state === state) && (finding === "" || i.findings.some((f) => f.type === finding)) && matches(i, q.toLowerCase()));
    const cmp = SORTS[sort];
    const sorted = [...list].sort(cmp);
    return desc ? sorted.reverse() : sorted;
  }, [ips.data, q, state, finding, sort, desc]);

  const [top, setTop] = useState(0);
  const [height, setHeight] = useState(600);
  const box = useRef<HTMLDivElement>(null);
  const onScroll = (e: UIEvent<HTMLDivElement>) => {
    setTop(e.currentTarget.scrollTop);
    setHeight(e.currentTarget.clientHeight);
  };
  const first = Math.max(0, Math.floor(top / ROW_PX) - OVERSCAN);
  const last = Math.min(rows.length, Math.ceil((top + height) / ROW_PX) + OVERSCAN);

  if (ips.error !== null) return <Failure message={ips.error} />;
  return (
    <>
      <div className="filters" role="search">
        <label>
          Search <input type="search" value={q} onChange={(e) => set({ q: e.target.value })} placeholder="IP, service, node, MAC" data-testid="search" />
        </label>
        <label>
          State{" "}
          <select value={state} onChange={(e) => set({ state: e.target.value })} data-testid="filter-state">
            <option value="">any</option>
            {Object.entries(STATE_TEXT).map(([k, v]) => (
              <option key={k} value={k}>
                {v}
              </option>
            ))}
          </select>
        </label>
        <label>
          Finding{" "}
          <select value={finding} onChange={(e) => set({ finding: e.target.value })} data-testid="filter-finding">
            <option value="">any</option>
            {["multi-responder", "wrong-owner", "silent-drop", "split-brain", "no-responder", "capture-lost"].map((f) => (
              <option key={f} value={f}>
                {f}
              </option>
            ))}
          </select>
        </label>
        <span className="muted" data-testid="row-count">
          {rows.length} of {ips.data?.length ?? 0} IPs
        </span>
        <span className="muted">Nodes in red answer although they are not the expected owner.</span>
      </div>
      {ips.data === undefined ? (
        <Skeleton rows={8} />
      ) : ips.data.length === 0 ? (
        <Empty>No IP seen yet. Agents report an IP as soon as a client asks for it; with Kubernetes, every LoadBalancer IP is listed even before that.</Empty>
      ) : (
        <div className="vtable" role="table" aria-label="LoadBalancer IPs" aria-rowcount={rows.length + 1} data-testid="ips">
          <div className="vrow vhead" role="row">
            {COLUMNS.map((c) => (
              <div key={c.label} role="columnheader" aria-sort={c.key !== null && c.key === sort ? (desc ? "descending" : "ascending") : undefined}>
                {c.key === null ? (
                  c.label
                ) : (
                  <button type="button" className="sort" onClick={() => set(c.key === sort ? { dir: desc ? "" : "desc" } : { sort: c.key === "ip" ? "" : (c.key ?? ""), dir: "" })}>
                    {c.label}
                    {c.key === sort ? (desc ? " ▼" : " ▲") : ""}
                  </button>
                )}
              </div>
            ))}
          </div>
          <div className="vbody" ref={box} onScroll={onScroll} tabIndex={0} aria-label="rows (scroll)">
            <div style={{ height: rows.length * ROW_PX, position: "relative" }}>
              {rows.slice(first, last).map((ip, k) => (
                <Row key={ip.ip} ip={ip} y={(first + k) * ROW_PX} index={first + k} />
              ))}
            </div>
          </div>
        </div>
      )}
    </>
  );
}

function Row({ ip, y, index }: { ip: Ip; y: number; index: number }) {
  const owner = ip.expectedOwner?.node ?? null;
  const answering = ip.responders.filter((r) => r.answering);
  const fastest = ip.responders.find((r) => r.mac === ip.fastest);
  const lastGrat = Math.max(0, ...ip.responders.map((r) => r.lastGratuitous ?? 0));
  return (
    <div className="vrow" role="row" aria-rowindex={index + 2} style={{ transform: `translateY(${y}px)`, height: ROW_PX }} data-ip={ip.ip} data-state={ip.state}>
      <div role="cell" className="mono">
        <Link href={`/ips/${ip.ip}`}>{ip.ip}</Link>
      </div>
      <div role="cell" data-testid="services">
        {ip.services.length === 0 ? <span className="muted">-</span> : ip.services.map((s) => `${s.namespace}/${s.name}`).join(", ")}
      </div>
      <div role="cell">{ip.services[0]?.externalTrafficPolicy ?? <span className="muted">-</span>}</div>
      <div role="cell" data-testid="owner" data-owner={owner ?? ""}>
        {owner === null ? <span className="muted">unknown</span> : <>{owner} <span className="muted">({ip.expectedOwner?.source})</span></>}
      </div>
      <div role="cell" className={`state state-${ip.state}`}>
        {STATE_TEXT[ip.state]}
      </div>
      <div role="cell" className="clip">
        {answering.length === 0 ? <span className="muted">none answering</span> : null}
        {answering.map((r) => (
          <span key={r.mac} className={`chip${owner !== null && r.node !== owner ? " wrong" : ""}`} data-testid="responder" data-node={r.node ?? ""} data-mac={r.mac} title={r.mac}>
            {r.node ?? r.mac}
          </span>
        ))}
      </div>
      <div role="cell" className={fastest !== undefined && owner !== null && fastest.node !== owner ? "state-multi-responder" : undefined}>
        {ip.state === "multi-responder" && fastest !== undefined ? (fastest.node ?? fastest.mac) : <span className="muted">-</span>}
      </div>
      <div role="cell">
        <Ago t={lastGrat} />
      </div>
      <div role="cell" className="clip" data-testid="findings">
        {ip.findings.length === 0 ? <span className="muted">none</span> : ip.findings.map((f) => <span key={f.type} className="chip" title={f.detail}>{f.type}</span>)}
      </div>
      <div role="cell" data-testid="requests">
        {ip.requests}
      </div>
    </div>
  );
}
