"use client";

import { useMemo, useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { CartesianGrid, Line, LineChart, ReferenceLine, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import type { RouterOutputs } from "~/server/api";
import { useTRPC } from "~/trpc/react";
import { Empty, Skeleton } from "./ui/states";
import { countTicks, lanes, markers, peak, tickLabel, ticks, type Lane, type Marker } from "./ui/timeline";

type Range = "15m" | "1h" | "24h";
type View = NonNullable<RouterOutputs["ips"]["byIp"]>;
type Incidents = RouterOutputs["incidents"]["list"];
const RANGE_MS: Record<Range, number> = { "15m": 15 * 60_000, "1h": 3_600_000, "24h": 86_400_000 };
const REPLIES = "var(--series-0)";
const ANNOUNCEMENTS = "var(--series-1)";

/** MarkerLabel writes a marker's label beside its line (findings at the top, handovers at the bottom), its detail on hover. */
function MarkerLabel({ viewBox, marker }: { viewBox?: { x?: number; y?: number; height?: number }; marker: Marker }) {
  const x = (viewBox?.x ?? 0) + 4;
  const y = marker.kind === "incident" ? (viewBox?.y ?? 0) + 12 : (viewBox?.y ?? 0) + (viewBox?.height ?? 0) - 4;
  return (
    <text
      x={x}
      y={y}
      fontSize={11}
      fill={marker.kind === "incident" ? "var(--bad)" : "var(--muted)"}
      data-testid="timeline-marker"
      data-kind={marker.kind}
    >
      <title>{marker.title}</title>
      {marker.label}
    </text>
  );
}

/** LaneChart is one responder's small chart: its replies and announcements per minute, on the x and y scale all lanes share. */
function LaneChart({
  lane,
  from,
  to,
  yTicks,
  marks,
}: {
  lane: Lane;
  from: number;
  to: number;
  yTicks: number[];
  marks: readonly Marker[];
}) {
  const span = to - from;
  // A minute or three is no line yet: dots show them.
  const few = lane.points.length <= 3;
  return (
    <figure
      className={lane.owner ? "lane owner" : "lane"}
      data-testid="timeline-node"
      data-node={lane.node ?? ""}
      data-mac={lane.mac}
      data-owner={lane.owner}
    >
      <figcaption>
        <strong>{lane.node ?? "not a cluster node"}</strong>
        {lane.owner ? <span className="chip owner-chip">owner</span> : null} <span className="mono muted">{lane.mac}</span>
        {lane.vendor === null ? null : <span className="muted"> {lane.vendor}</span>}
      </figcaption>
      <ResponsiveContainer width="100%" height={150}>
        <LineChart data={lane.points} margin={{ top: 16, right: 12, bottom: 0, left: -16 }}>
          <CartesianGrid strokeDasharray="3 3" stroke="var(--line)" />
          <XAxis
            dataKey="minute"
            type="number"
            domain={[from, to]}
            ticks={ticks(from, to)}
            tickFormatter={(t: number) => tickLabel(t, span)}
            stroke="var(--muted)"
            fontSize={11}
            allowDataOverflow
          />
          <YAxis domain={[0, yTicks.at(-1) ?? 1]} ticks={yTicks} allowDecimals={false} stroke="var(--muted)" fontSize={11} />
          <Tooltip
            labelFormatter={(t) => new Date(Number(t)).toLocaleString()}
            contentStyle={{ background: "var(--bg)", border: "1px solid var(--line)", color: "var(--fg)", fontSize: 12 }}
          />
          {lane.series.includes(`${lane.label} replies`) ? (
            <Line type="linear" dataKey="replies" stroke={REPLIES} dot={few && { r: 3, fill: REPLIES }} isAnimationActive={false} />
          ) : null}
          {lane.series.includes(`${lane.label} announcements`) ? (
            <Line
              type="linear"
              dataKey="announcements"
              stroke={ANNOUNCEMENTS}
              strokeDasharray="4 3"
              dot={few && { r: 3, fill: ANNOUNCEMENTS }}
              isAnimationActive={false}
            />
          ) : null}
          {marks.map((m) => (
            <ReferenceLine
              key={`${m.kind}@${m.t}`}
              x={m.t}
              stroke={m.kind === "incident" ? "var(--bad)" : "var(--muted)"}
              strokeDasharray={m.kind === "incident" ? undefined : "2 4"}
              label={<MarkerLabel marker={m} />}
            />
          ))}
        </LineChart>
      </ResponsiveContainer>
    </figure>
  );
}

/**
 * IpTimeline draws one small chart per responder MAC over the chosen range (same time axis and count scale in each,
 * the owner first), with the handovers and the findings opened drawn across all of them.
 */
export function IpTimeline({ view, incidents }: { view: View; incidents: Incidents }) {
  const trpc = useTRPC();
  const [range, setRange] = useState<Range>("1h");
  const timeline = useQuery({ ...trpc.ips.timeline.queryOptions({ ip: view.ip, range }), refetchInterval: 10_000 });
  const owner = view.expectedOwner?.node ?? null;
  const all = useMemo(() => lanes(timeline.data ?? [], view.responders, owner), [timeline.data, view.responders, owner]);
  // The axis runs from the first minute with frames (or the range's start) to the time of the data, for every lane.
  const to = timeline.dataUpdatedAt === 0 ? Date.now() : timeline.dataUpdatedAt;
  const first = Math.min(...all.map((l) => l.points[0]?.minute ?? Infinity));
  const from = Math.max(to - RANGE_MS[range], Math.min(first, to - 5 * 60_000));
  const marks = useMemo(() => markers(view.handovers, incidents, from, to), [view.handovers, incidents, from, to]);
  const yTicks = countTicks(peak(all));

  return (
    <>
      <div className="filters" role="group" aria-label="time range">
        {(["15m", "1h", "24h"] as const).map((r) => (
          <button key={r} type="button" aria-pressed={range === r} onClick={() => setRange(r)}>
            last {r}
          </button>
        ))}
        <span className="muted legend">
          <span style={{ color: REPLIES }}>━ replies</span> <span style={{ color: ANNOUNCEMENTS }}>┅ announcements</span> per minute ·{" "}
          <span className="bad-text">│ finding opened</span> · ┊ handover
        </span>
      </div>
      {timeline.isLoading ? (
        <Skeleton rows={4} />
      ) : all.length === 0 ? (
        <Empty>No replies or announcements in this range.</Empty>
      ) : (
        <div
          className="chart lanes"
          data-testid="timeline"
          data-series={all.flatMap((l) => l.series).join("|")}
          data-markers={marks.length}
        >
          {all.map((l) => (
            <LaneChart key={l.mac} lane={l} from={from} to={to} yTicks={yTicks} marks={marks} />
          ))}
        </div>
      )}
    </>
  );
}
