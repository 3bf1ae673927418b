import { MAX_EVIDENCE_TIMES, worstFinding, type FindingType, type OpenFinding } from "@whohas/core";
import type { Db, Param } from "./db.js";

/** MAX_LIST bounds one list of incidents. */
export const MAX_LIST = 5000;

/** A Facet is one finding's life inside an incident: it opens, gathers evidence and clears on its own times. */
export interface Facet extends Omit<OpenFinding, "ip"> {
  /** When it cleared; null while it holds. */
  readonly resolvedAt: number | null;
}

/**
 * An Incident is what went wrong with one subject (an IP on its VLAN, or a node) from its first finding until its
 * last one cleared: its findings are facets. It is named after its worst facet (FINDING_ORDER); `macs`, `detail` and
 * the times sum up its facets (those holding, while any does).
 */
export interface Incident {
  readonly id: number;
  readonly ip: string;
  readonly type: FindingType;
  readonly macs: readonly string[];
  readonly detail: string;
  readonly evidence: unknown;
  readonly firstSeen: number;
  readonly lastSeen: number;
  readonly count: number;
  readonly samples: readonly number[];
  readonly resolvedAt: number | null;
  readonly acknowledgedBy: string | null;
  readonly acknowledgedAt: number | null;
  /** Oldest first. */
  readonly facets: readonly Facet[];
}

export interface IncidentEvent {
  readonly t: number;
  readonly kind: "opened" | "updated" | "resolved" | "acknowledged";
  readonly detail: string;
}

interface IncidentRow {
  id: number;
  ip: string;
  type: string;
  macs: string;
  detail: string;
  evidence: string;
  first_seen: number;
  last_seen: number;
  count: number;
  samples: string;
  resolved_at: number | null;
  acknowledged_by: string | null;
  acknowledged_at: number | null;
}

interface FacetRow {
  incident_id: number;
  type: string;
  macs: string;
  detail: string;
  first_seen: number;
  last_seen: number;
  count: number;
  samples: string;
  resolved_at: number | null;
}

const toFacet = (r: FacetRow): Facet => ({
  type: r.type as FindingType,
  macs: JSON.parse(r.macs) as string[],
  detail: r.detail,
  firstSeen: r.first_seen,
  lastSeen: r.last_seen,
  count: r.count,
  samples: JSON.parse(r.samples) as number[],
  resolvedAt: r.resolved_at,
});

const toIncident = (r: IncidentRow, facets: readonly Facet[]): Incident => ({
  id: r.id,
  ip: r.ip,
  type: r.type as FindingType,
  macs: JSON.parse(r.macs) as string[],
  detail: r.detail,
  evidence: JSON.parse(r.evidence) as unknown,
  firstSeen: r.first_seen,
  lastSeen: r.last_seen,
  count: r.count,
  samples: JSON.parse(r.samples) as number[],
  resolvedAt: r.resolved_at,
  acknowledgedBy: r.acknowledged_by,
  acknowledgedAt: r.acknowledged_at,
  facets,
});

/** What opening a facet did: the subject's incident, and whether that incident opened with it. */
export interface Opened {
  readonly id: number;
  readonly incidentOpened: boolean;
}

/**
 * whole gives a finding's times in whole milliseconds, as the store keeps them: a finding dated by a reply is dated to
 * a fraction of a millisecond (the request's time and the reply's delay).
 */
const whole = (f: OpenFinding): OpenFinding => ({
  ...f,
  firstSeen: Math.round(f.firstSeen),
  lastSeen: Math.round(f.lastSeen),
  samples: f.samples.map((t) => Math.round(t)),
});

/** holdingFindings are an incident's facets still open: the findings a tracker holds open again after a restart. */
export const holdingFindings = (i: Incident): OpenFinding[] =>
  i.facets
    .filter((f) => f.resolvedAt === null)
    .map((f) => ({
      ip: i.ip,
      type: f.type,
      macs: f.macs,
      detail: f.detail,
      firstSeen: f.firstSeen,
      lastSeen: f.lastSeen,
      count: f.count,
      samples: f.samples,
    }));

/**
 * summarize writes an incident's summary from its facets: named after the worst it ever held; the MACs and text of
 * those holding (of all, once none does); the times and counts of all. The store and its migration share it.
 */
export async function summarize(db: Db, id: number): Promise<void> {
  const facets = (await db.all<FacetRow>("SELECT * FROM incident_facets WHERE incident_id = ? ORDER BY first_seen", [id])).map(toFacet);
  if (facets.length === 0) return;
  const holding = facets.filter((f) => f.resolvedAt === null);
  const shown = holding.length > 0 ? holding : facets;
  const worstOf = (list: readonly Facet[]) => {
    const type = worstFinding(list.map((f) => f.type));
    return list.filter((f) => f.type === type).at(-1) ?? list[0];
  };
  const worst = worstOf(facets);
  const text = worstOf(shown);
  const samples = [...new Set(facets.flatMap((f) => f.samples))].sort((a, b) => a - b).slice(-MAX_EVIDENCE_TIMES);
  await db.run("UPDATE incidents SET type = ?, macs = ?, detail = ?, first_seen = ?, last_seen = ?, count = ?, samples = ? WHERE id = ?", [
    worst?.type ?? "multi-responder",
    JSON.stringify([...new Set(shown.flatMap((f) => f.macs))].sort()),
    text?.detail ?? "",
    Math.min(...facets.map((f) => f.firstSeen)),
    Math.max(...facets.map((f) => f.lastSeen)),
    facets.reduce((n, f) => n + f.count, 0),
    JSON.stringify(samples),
    id,
  ]);
}

/**
 * The IncidentsRepo keeps incidents, one per subject while it lasts, with their facets and events, written when they
 * happen.
 */
export class IncidentsRepo {
  constructor(readonly db: Db) {}

  static async #event(db: Db, id: number, t: number, kind: IncidentEvent["kind"], detail: string): Promise<void> {
    await db.run("INSERT INTO incident_events (incident_id, t, kind, detail) VALUES (?, ?, ?, ?)", [id, t, kind, detail]);
  }

  /**
   * open adds a finding that opened as a facet of its subject's open incident, or opens an incident for it (with
   * `evidence`, what it records of the subject when it opens).
   */
  open(finding: OpenFinding, evidence: unknown): Promise<Opened> {
    const f = whole(finding);
    return this.db.tx(async (db) => {
      const open = await db.get<{ id: number }>("SELECT id FROM incidents WHERE ip = ? AND resolved_at IS NULL ORDER BY id LIMIT 1", [
        f.ip,
      ]);
      let id = open?.id;
      if (id === undefined) {
        const row = await db.get<{ id: number }>(
          `INSERT INTO incidents (ip, type, macs, detail, evidence, first_seen, last_seen, count, samples) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
          [
            f.ip,
            f.type,
            JSON.stringify(f.macs),
            f.detail,
            JSON.stringify(evidence),
            f.firstSeen,
            f.lastSeen,
            f.count,
            JSON.stringify(f.samples),
          ],
        );
        id = row?.id ?? 0;
        await IncidentsRepo.#event(db, id, f.firstSeen, "opened", `${f.type}: ${f.detail}`);
      } else {
        // Something new is wrong: an acknowledgement was for what the incident held then.
        await db.run("UPDATE incidents SET acknowledged_by = NULL, acknowledged_at = NULL WHERE id = ?", [id]);
        // Dated when it joined, not before the incident opened: a finding's evidence may predate the one that opened
        // it (it is dated by the request it is about, and judged a moment later).
        const opened = await db.get<{ t: number }>("SELECT MIN(t) AS t FROM incident_events WHERE incident_id = ? AND kind = 'opened'", [
          id,
        ]);
        await IncidentsRepo.#event(db, id, Math.max(f.firstSeen, opened?.t ?? 0), "updated", `${f.type} too: ${f.detail}`);
      }
      // A finding that clears and comes back inside one incident is a new facet: each life keeps its own times.
      await db.run(
        `INSERT INTO incident_facets (incident_id, type, macs, detail, first_seen, last_seen, count, samples, resolved_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)
         ON CONFLICT (incident_id, type, first_seen) DO UPDATE SET macs = excluded.macs, detail = excluded.detail,
           last_seen = excluded.last_seen, count = excluded.count, samples = excluded.samples, resolved_at = NULL`,
        [id, f.type, JSON.stringify(f.macs), f.detail, f.firstSeen, f.lastSeen, f.count, JSON.stringify(f.samples)],
      );
      await summarize(db, id);
      return { id, incidentOpened: open === undefined };
    });
  }

  /** touch updates the facet of `f` in incident `id` with its latest evidence; `event` also records a timeline entry. */
  async touch(id: number, finding: OpenFinding, event: string | null): Promise<void> {
    const f = whole(finding);
    await this.db.tx(async (db) => {
      await db.run(
        "UPDATE incident_facets SET macs = ?, detail = ?, last_seen = ?, count = ?, samples = ? WHERE incident_id = ? AND type = ? AND resolved_at IS NULL",
        [JSON.stringify(f.macs), f.detail, f.lastSeen, f.count, JSON.stringify(f.samples), id, f.type],
      );
      await summarize(db, id);
      if (event !== null) await IncidentsRepo.#event(db, id, f.lastSeen, "updated", `${f.type}: ${event}`);
    });
  }

  /** resolve clears the facet of `f` at `at`; the incident resolves with its last facet. Returns whether it did. */
  resolve(id: number, finding: OpenFinding, resolvedAt: number): Promise<boolean> {
    const f = whole(finding);
    const at = Math.round(resolvedAt);
    return this.db.tx(async (db) => {
      await db.run(
        "UPDATE incident_facets SET last_seen = ?, count = ?, samples = ?, resolved_at = ? WHERE incident_id = ? AND type = ? AND resolved_at IS NULL",
        [f.lastSeen, f.count, JSON.stringify(f.samples), at, id, f.type],
      );
      const why = `cleared after ${Math.round((at - f.lastSeen) / 1000)} s without evidence`;
      const holding = await db.get<{ n: number }>(
        "SELECT COUNT(*) AS n FROM incident_facets WHERE incident_id = ? AND resolved_at IS NULL",
        [id],
      );
      await summarize(db, id);
      if ((holding?.n ?? 0) > 0) {
        await IncidentsRepo.#event(db, id, at, "updated", `${f.type} ${why}`);
        return false;
      }
      await db.run("UPDATE incidents SET resolved_at = ? WHERE id = ?", [at, id]);
      await IncidentsRepo.#event(db, id, at, "resolved", `${f.type} ${why}, the last of its findings`);
      return true;
    });
  }

  /** acknowledge marks an incident seen by `actor`; false when there is no such incident. */
  acknowledge(id: number, actor: string, at: number): Promise<boolean> {
    return this.db.tx(async (db) => {
      const { changes } = await db.run("UPDATE incidents SET acknowledged_by = ?, acknowledged_at = ? WHERE id = ?", [actor, at, id]);
      if (changes > 0)
        await db.run("INSERT INTO incident_events (incident_id, t, kind, detail) VALUES (?, ?, ?, ?)", [
          id,
          at,
          "acknowledged",
          `by ${actor}`,
        ]);
      return changes > 0;
    });
  }

  /** #withFacets reads the facets of `rows` in one query. */
  async #withFacets(rows: readonly IncidentRow[]): Promise<Incident[]> {
    if (rows.length === 0) return [];
    const byId = new Map<number, Facet[]>(rows.map((r) => [r.id, []]));
    for (let i = 0; i < rows.length; i += 500) {
      const ids = rows.slice(i, i + 500).map((r) => r.id);
      const facets = await this.db.all<FacetRow>(
        `SELECT * FROM incident_facets WHERE incident_id IN (${ids.map(() => "?").join(",")}) ORDER BY first_seen, type`,
        ids,
      );
      for (const f of facets) byId.get(f.incident_id)?.push(toFacet(f));
    }
    return rows.map((r) => toIncident(r, byId.get(r.id) ?? []));
  }

  /** openAll lists every open incident (a restarting hub holds them all open again). */
  async openAll(): Promise<Incident[]> {
    return this.#withFacets(await this.db.all<IncidentRow>("SELECT * FROM incidents WHERE resolved_at IS NULL ORDER BY id"));
  }

  /** openByType counts, per finding type, the open incidents in which a finding of that type holds now. */
  async openByType(): Promise<Map<string, number>> {
    const rows = await this.db.all<{ type: string; n: number }>(
      "SELECT type, COUNT(DISTINCT incident_id) AS n FROM incident_facets WHERE resolved_at IS NULL GROUP BY type",
    );
    return new Map(rows.map((r) => [r.type, r.n]));
  }

  /** incidents lists incidents, newest first, at most MAX_LIST (1..5000) of them; `open` filters by state, `ip` by address. */
  async list(q: { open?: boolean; ip?: string; limit?: number } = {}): Promise<Incident[]> {
    const where: string[] = [];
    const params: Param[] = [];
    if (q.open === true) where.push("resolved_at IS NULL");
    if (q.open === false) where.push("resolved_at IS NOT NULL");
    if (q.ip !== undefined) {
      where.push("ip = ?");
      params.push(q.ip);
    }
    params.push(Math.max(1, Math.min(Math.trunc(q.limit ?? 500) || 500, MAX_LIST)));
    const sql = `SELECT * FROM incidents ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY first_seen DESC, id DESC LIMIT ?`;
    return this.#withFacets(await this.db.all<IncidentRow>(sql, params));
  }

  async get(id: number): Promise<(Incident & { readonly events: readonly IncidentEvent[] }) | null> {
    const r = await this.db.get<IncidentRow>("SELECT * FROM incidents WHERE id = ?", [id]);
    if (r === undefined) return null;
    const events = await this.db.all<IncidentEvent>("SELECT t, kind, detail FROM incident_events WHERE incident_id = ? ORDER BY t, id", [
      id,
    ]);
    const [incident] = await this.#withFacets([r]);
    return incident === undefined ? null : { ...incident, events };
  }

  /** prune deletes at most `limit` incidents resolved before `cut`; returns how many. */
  async prune(cut: number, limit: number): Promise<number> {
    return (
      await this.db.run(
        "DELETE FROM incidents WHERE id IN (SELECT id FROM incidents WHERE resolved_at IS NOT NULL AND resolved_at < ? LIMIT ?)",
        [cut, limit],
      )
    ).changes;
  }
}
