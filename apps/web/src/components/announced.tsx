"use client";

import Link from "next/link";
import { ipHref } from "./ui/ip-name";
import { Head } from "./ui/table";
import { Ago } from "./ui/time";

/** One IP of a re-announcement, as the server reports it. */
export interface AnnouncedRow {
  readonly ip: string;
  readonly node: string | null;
  readonly at: number | null;
  readonly state: "waiting" | "announcing" | "ok" | "failed" | "refused";
  readonly message: string;
}

const STATE_TEXT: Record<AnnouncedRow["state"], string> = {
  waiting: "waiting its turn",
  announcing: "announcing…",
  ok: "announced",
  failed: "failed",
  refused: "not announced",
};

/**
 * AnnouncedTable lists the IPs a re-announcement covers: which node announced each (its expected owner) and when,
 * and why an IP was not announced.
 */
export function AnnouncedTable({ rows, caption }: { rows: readonly AnnouncedRow[]; caption: string }) {
  return (
    <table className="checked" data-testid="announced">
      <caption>{caption}</caption>
      <Head cols={["IP", "Announced by", "Started", "Result"]} />
      <tbody>
        {rows.map((a) => (
          <tr key={a.ip} data-ip={a.ip} data-state={a.state}>
            <td>
              <Link href={ipHref(a.ip)} className="mono">
                {a.ip}
              </Link>
            </td>
            <td>{a.node ?? <span className="muted">no owner known</span>}</td>
            <td>
              <Ago t={a.at} empty="not started" />
            </td>
            <td className={a.state === "failed" || a.state === "refused" ? "bad-text" : undefined}>
              {STATE_TEXT[a.state]}
              {a.state === "failed" || a.state === "refused" ? `: ${a.message}` : null}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
