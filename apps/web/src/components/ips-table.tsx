"use client";

import { usePathname, useRouter, useSearchParams } from "next/navigation";
import { memo, useEffect, useMemo, useRef, useState, type UIEvent } from "react";
import { STATE_TEXT, ipsQuery, ownerSourceName, viewRows, type Ip, type SortKey } from "./ui/ips-view";
import { Options } from "./ui/table";
import { holders, notANode } from "./ui/stranger";
import { useIps } from "./ui/use-ips";
import { Empty, Failure, Skeleton } from "./ui/states";
import { Ago } from "./ui/time";
import { IpLink } from "./ui/ip-name";

/** ROW_PX: every row has the same height, so only the rows in view are rendered (5,000 IPs stay smooth). */
const ROW_PX = 56;
const OVERSCAN = 8;
/** The columns; `fold`: secondary, folded away on screens under 1440 px (the IP page shows them). */
const COLUMNS: { key: SortKey | null; label: string; title?: string; fold?: boolean }[] = [
  { key: "ip", label: "IP" },
  { key: "service", label: "Service" },
  { key: null, label: "ETP", title: "externalTrafficPolicy" },
  { key: "owner", label: "Expected owner" },
  { key: "state", label: "State" },
  { key: "responders", label: "Answering" },
  { key: null, label: "Usually first", fold: true },
  { key: null, label: "Announced", fold: true },
  { key: null, label: "Findings" },
  { key: "requests", label: "Requests" },
];

/**
 * FirstScreen is what the server rendered before the list arrives: the first rows of the view the URL asks for, and
 * the counts, so the page shows data at its first paint.
 */
export interface FirstScreen {
  readonly rows: readonly Ip[];
  readonly matched: number;
  readonly total: number;
}

/** IpsTable lists every IP with sort, filter and search kept in the URL, so a filtered view can be shared as a link. */
export function IpsTable({ initial }: { initial: FirstScreen | null }) {
  const ips = useIps();
  const params = useSearchParams();
  const router = useRouter();
  const path = usePathname();
  const view = ipsQuery((k) => params.get(k));
  const { q, state, finding, sort, desc } = view;
  const set = (changes: Record<string, string>) => {
    const next = new URLSearchParams(params.toString());
    for (const [key, value] of Object.entries(changes)) {
      if (value === "") next.delete(key);
      else next.set(key, value);
    }
    router.replace(`${path}${next.size > 0 ? `?${next.toString()}` : ""}`, { scroll: false });
  };
  // The search box keeps what was typed: the URL catches up a moment later, and a box showing the URL would drop the
  // keys typed meanwhile. The URL sets the box only when it changes from elsewhere (back, a shared link), not while typing.
  const [text, setText] = useState(q);
  const search = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (document.activeElement !== search.current) setText(q);
  }, [q]);
  const rows = useMemo(
    () => (ips.data === undefined ? null : viewRows(ips.data, { q, state, finding, sort, desc })),
    [ips.data, q, state, finding, sort, desc],
  );
  // Until the whole list is here, the first screen the server rendered (its rows are the first of the same view).
  const shown = rows ?? initial?.rows ?? [];
  const matched = rows?.length ?? initial?.matched ?? 0;
  const total = ips.data?.length ?? initial?.total ?? 0;
  const ready = ips.data !== undefined || initial !== null;

  const [top, setTop] = useState(0);
  const [height, setHeight] = useState(600);
  const box = useRef<HTMLDivElement>(null);
  const onScroll = (e: UIEvent<HTMLDivElement>) => {
    setTop(e.currentTarget.scrollTop);
    setHeight(e.currentTarget.clientHeight);
  };
  const first = Math.max(0, Math.floor(top / ROW_PX) - OVERSCAN);
  const last = Math.min(shown.length, Math.ceil((top + height) / ROW_PX) + OVERSCAN);

  if (ips.error !== null) return <Failure message={ips.error} />;
  return (
    <>
      <div className="filters" role="search">
        <label>
          Search{" "}
          <input
            type="search"
            ref={search}
            value={text}
            onChange={(e) => {
              setText(e.target.value);
              set({ q: e.target.value });
            }}
            placeholder="IP, service, node, MAC"
            data-testid="search"
          />
        </label>
        <label>
          State{" "}
          <select value={state} onChange={(e) => set({ state: e.target.value })} data-testid="filter-state">
            <option value="">any</option>
            <Options of={STATE_TEXT} />
          </select>
        </label>
        <label>
          Finding{" "}
          <select value={finding} onChange={(e) => set({ finding: e.target.value })} data-testid="filter-finding">
            <option value="">any</option>
            {["multi-responder", "wrong-owner", "wrong-interface", "silent-drop", "split-brain", "no-responder", "capture-lost"].map(
              (f) => (
                <option key={f} value={f}>
                  {f}
                </option>
              ),
            )}
          </select>
        </label>
        <span className="muted" data-testid="row-count">
          {matched} of {total} IPs
        </span>
        <span className="muted">Nodes in red answer although they are not the expected owner.</span>
      </div>
      {!ready ? (
        <Skeleton rows={8} />
      ) : total === 0 ? (
        <Empty>
          No IP seen yet. Agents report an IP as soon as a client asks for it; with Kubernetes, every LoadBalancer IP is listed even before
          that.
        </Empty>
      ) : (
        <div className="vtable" role="table" aria-label="LoadBalancer IPs" aria-rowcount={matched + 1} data-testid="ips">
          <div className="vrow vhead" role="row">
            {COLUMNS.map((c) => (
              <div
                key={c.label}
                role="columnheader"
                className={c.fold === true ? "fold" : undefined}
                title={c.title ?? c.label}
                aria-sort={c.key !== null && c.key === sort ? (desc ? "descending" : "ascending") : undefined}
              >
                {c.key === null ? (
                  c.label
                ) : (
                  <button
                    type="button"
                    className="sort"
                    onClick={() =>
                      set(c.key === sort ? { dir: desc ? "" : "desc" } : { sort: c.key === "ip" ? "" : (c.key ?? ""), dir: "" })
                    }
                  >
                    {c.label}
                    {/* The arrow is for the eye: aria-sort on the header tells assistive technology. */}
                    {c.key === sort && <span aria-hidden="true">{desc ? " ▼" : " ▲"}</span>}
                  </button>
                )}
              </div>
            ))}
          </div>
          <div className="vbody" role="rowgroup" ref={box} onScroll={onScroll} tabIndex={0} aria-label="rows (scroll)">
            <div style={{ height: matched * ROW_PX, position: "relative" }}>
              {shown.slice(first, last).map((ip, k) => (
                <Row key={ip.ip} ip={ip} y={(first + k) * ROW_PX} index={first + k} />
              ))}
            </div>
          </div>
        </div>
      )}
    </>
  );
}

/** Row is one IP; memoised, so scrolling renders only the rows that come into view, not every row in it. */
const Row = memo(function Row({ ip, y, index }: { ip: Ip; y: number; index: number }) {
  const owner = ip.expectedOwner?.node ?? null;
  const answering = holders(ip.responders, ip.findings);
  const fastest = ip.responders.find((r) => r.mac === ip.fastest);
  const lastGrat = Math.max(0, ...ip.responders.map((r) => r.lastGratuitous ?? 0));
  const services = ip.services.map((s) => `${s.namespace}/${s.name}`).join(", ");
  return (
    <div
      className="vrow"
      role="row"
      aria-rowindex={index + 2}
      style={{ transform: `translateY(${y}px)`, height: ROW_PX }}
      data-ip={ip.ip}
      data-state={ip.state}
    >
      <div role="cell" className="mono clip">
        <IpLink ipKey={ip.ip} />
      </div>
      <div role="cell" data-testid="services" title={services}>
        {services === "" ? <span className="muted">-</span> : services}
      </div>
      <div role="cell" title={ip.services[0]?.externalTrafficPolicy}>
        {ip.services[0]?.externalTrafficPolicy ?? <span className="muted">-</span>}
      </div>
      <div
        role="cell"
        data-testid="owner"
        data-owner={owner ?? ""}
        title={owner === null ? undefined : `${owner} (${ownerSourceName(ip.expectedOwner?.source)})`}
      >
        {owner === null ? (
          <span className="muted">unknown</span>
        ) : (
          <>
            {owner} <span className="muted">({ownerSourceName(ip.expectedOwner?.source)})</span>
          </>
        )}
      </div>
      <div role="cell" className={`state state-${ip.state}`} data-testid="state">
        {STATE_TEXT[ip.state]}
      </div>
      <div role="cell" className="clip">
        {answering.length === 0 ? <span className="muted">none answering</span> : null}
        {answering.map((r) => (
          <span
            key={r.mac}
            className={`chip${owner !== null && r.node !== owner ? " wrong" : ""}`}
            data-testid="responder"
            data-node={r.node ?? ""}
            data-mac={r.mac}
            title={r.node === null ? `${r.mac}: ${notANode(r.vendor)}` : r.mac}
          >
            {r.node ?? `${r.vendor ?? r.mac} (not a node)`}
          </span>
        ))}
      </div>
      <div
        role="cell"
        className={`fold${fastest !== undefined && owner !== null && fastest.node !== owner ? " state-multi-responder" : ""}`}
      >
        {ip.state === "multi-responder" && fastest !== undefined ? (fastest.node ?? fastest.mac) : <span className="muted">-</span>}
      </div>
      <div role="cell" className="fold">
        <Ago t={lastGrat} />
      </div>
      <div role="cell" className="clip" data-testid="findings">
        {ip.findings.length === 0 ? (
          <span className="muted">none</span>
        ) : (
          ip.findings.map((f) => (
            <span key={f.type} className="chip" title={f.detail}>
              {f.type}
            </span>
          ))
        )}
      </div>
      <div role="cell" data-testid="requests">
        {ip.requests}
      </div>
    </div>
  );
});
