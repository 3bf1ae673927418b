"use client";

import { useState } from "react";
import type { RouterOutputs } from "~/server/api";
import { BASE_PATH } from "~/env";
import { Ago } from "./ui/time";

type Summary = NonNullable<RouterOutputs["incidents"]["byId"]>["capture"];

// The links have no download attribute: the hub answers a capture as an attachment, and a refusal (too large, too
// many at once) shows its reason in the browser instead of a failed download.

/** A capture holds ARP and NDP frames only: anyone signed in may download one. */
const HOLDS = "ARP/NDP frames only, as each node's agent captured them; opens in Wireshark";

/**
 * IncidentCapture offers an incident's frames as one pcapng, and says what the hub stored of them: which nodes sent
 * how many, which are missing and why.
 */
export function IncidentCapture({ id, open, summary }: { id: number; open: boolean; summary: Summary }) {
  return (
    <section aria-labelledby="capture-h">
      <h2 id="capture-h">Frames</h2>
      <p>
        <a className="button" href={`${BASE_PATH}/api/v1/incidents/${id}/capture`} data-testid="download-capture">
          Download capture
        </a>{" "}
        <span className="muted">
          pcapng, {HOLDS}: 30 s before the first evidence to 30 s after{open ? ", and to now while the incident is open" : ""}.
        </span>
      </p>
      {summary === null ? (
        <p className="muted" data-testid="capture-summary">
          Not stored yet: the hub asks the agents 30 s after the first evidence (a download asks them now).
        </p>
      ) : (
        <ul data-testid="capture-summary">
          {summary.nodes.map((n) => (
            <li key={n.node}>
              {n.node}:{" "}
              {n.missing === null ? (
                `${n.frames} frame${n.frames === 1 ? "" : "s"}`
              ) : (
                <span className="bad-text">missing ({n.missing})</span>
              )}
            </li>
          ))}
          <li className="muted">
            Stored <Ago t={summary.collectedAt} />.
          </li>
        </ul>
      )}
    </section>
  );
}

const WINDOWS = [
  { label: "last minute", last: "1m" },
  { label: "last 5 minutes", last: "5m" },
  { label: "last 10 minutes", last: "10m" },
];

/** IpCapture downloads the frames every agent holds now about one IP, for a recent window chosen here. */
export function IpCapture({ ip }: { ip: string }) {
  const [last, setLast] = useState("1m");
  return (
    <span className="capture">
      <a
        className="button"
        // The window ends when the link is followed, not when the page was drawn.
        href={`${BASE_PATH}/api/v1/ips/${encodeURIComponent(ip)}/capture?last=${last}`}
        title={`pcapng, ${HOLDS}`}
        data-testid="download-ip-capture"
      >
        Download capture
      </a>{" "}
      <select aria-label="Capture window" value={last} onChange={(e) => setLast(e.target.value)}>
        {WINDOWS.map((w) => (
          <option key={w.last} value={w.last}>
            {w.label}
          </option>
        ))}
      </select>
    </span>
  );
}
