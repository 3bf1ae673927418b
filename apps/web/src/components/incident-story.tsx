"use client";

import Link from "next/link";
import { useRef, useState } from "react";
import type { RouterOutputs } from "~/server/api";
import { advise, type Facts } from "./ui/advice";
import { Empty } from "./ui/states";

type Story = NonNullable<RouterOutputs["incidents"]["story"]>;
type Entry = Story["entries"][number];

/** ACTION_NAMES says what each audited action was, as the story lists it. */
const ACTION_NAMES: Readonly<Record<string, string>> = {
  "ip.probe": "probe started",
  "ip.probe.result": "probe finished",
  "ips.probe": "fix verification probe started",
  "ips.probe.result": "fix verification probe finished",
  "ip.reannounce": "force re-announce",
  "ips.reannounce": "re-announced with its group",
  "capture.download": "capture downloaded",
  "remediation.apply": "strictARP fix",
  "remediation.rollback": "strictARP rollback",
  "remediation.backup": "kube-proxy ConfigMap backed up",
};

/** clock shows a time with seconds, and the day when it is not today. */
function clock(t: number): string {
  const d = new Date(t);
  const time = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  return d.toDateString() === new Date().toDateString() ? time : `${d.toLocaleDateString()} ${time}`;
}

const party = (p: { node: string | null; mac: string }) => p.node ?? p.mac;

/** What reads one entry of the story: what happened, in a word, and the rest. */
function What({ e }: { e: Entry }) {
  switch (e.kind) {
    case "incident":
      return (
        <>
          <span className={e.event === "resolved" ? "chip ok-text" : e.event === "opened" ? "chip bad-text" : "chip"}>{e.event}</span>{" "}
          {e.detail}
        </>
      );
    case "handover":
      return (
        <>
          <span className="chip">handover</span> {party(e.from)} → {party(e.to)}, {Math.round(e.gapMs)} ms without an answer
          {e.announced === false ? ", not announced: clients that cached the old MAC keep sending there" : null}
        </>
      );
    case "action":
      return (
        <>
          <span className="chip">{ACTION_NAMES[e.action] ?? e.action}</span> by <strong>{e.by}</strong>
          {e.outcome === "ok" ? null : <span className="bad-text"> ({e.outcome})</span>}
          {e.detail === "" ? null : <span className="muted"> · {e.detail}</span>}
        </>
      );
  }
}

/**
 * WhatHappened is the incident's story in time order: its findings opening, changing and clearing, the IP's
 * handovers and the actions people took on it.
 */
export function WhatHappened({ entries }: { entries: Story["entries"] }) {
  if (entries.length === 0) return <Empty>Nothing recorded yet.</Empty>;
  return (
    <ol className="story" data-testid="incident-events">
      {entries.map((e, k) => (
        <li key={k} data-kind={e.kind === "incident" ? e.event : e.kind}>
          <time dateTime={new Date(e.t).toISOString()} title={new Date(e.t).toLocaleString()}>
            {clock(e.t)}
          </time>
          <span>
            <What e={e} />
          </span>
        </li>
      ))}
    </ol>
  );
}

/** Command shows one command to copy: selectable text, and a button that copies it when the browser lets it. */
function Command({ text }: { text: string }) {
  const [state, setState] = useState<"idle" | "copied" | "select">("idle");
  const pre = useRef<HTMLPreElement>(null);
  const copy = async () => {
    try {
      // navigator.clipboard is absent outside a secure context (a hub served over plain http).
      await navigator.clipboard.writeText(text);
      setState("copied");
    } catch {
      const el = pre.current;
      if (el !== null) window.getSelection()?.selectAllChildren(el);
      setState("select");
    }
  };
  return (
    <div className="command">
      <pre ref={pre} data-testid="command">
        {text}
      </pre>
      <button type="button" onClick={() => void copy()} aria-label="copy the command">
        {state === "copied" ? "Copied" : "Copy"}
      </button>
      {state === "select" ? (
        <span className="muted" role="status">
          The browser did not allow copying: the text is selected, press Ctrl+C.
        </span>
      ) : null}
    </div>
  );
}

/** WhatToDo lists the steps for the findings that hold, with their commands; a resolved incident needs none. */
export function WhatToDo({ story, findings }: { story: Story; findings: Facts["findings"] }) {
  if (findings.length === 0) return <Empty testId="steps-none">Nothing to do now: every finding has cleared.</Empty>;
  const steps = advise({ ...story, findings });
  if (steps.length === 0) return <Empty testId="steps-none">whohas has no advice for {findings.map((f) => f.type).join(", ")}.</Empty>;
  return (
    <ol className="steps" data-testid="next-steps">
      {steps.map((s) => (
        <li key={s.key} data-step={s.key}>
          <strong>{s.title}</strong>
          <p>{s.why}</p>
          {s.commands.map((c) => (
            <Command key={c} text={c} />
          ))}
          {s.link === null ? null : (
            <p>
              <Link href={s.link.href} data-testid="step-link">
                {s.link.text}
              </Link>
            </p>
          )}
        </li>
      ))}
    </ol>
  );
}
