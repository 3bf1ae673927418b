import type { EvidenceFrame, MissingNode, NodeEvidence } from "@whohas/core";
import type { Db } from "./db.js";

/** A StoredEvidence is what the hub keeps of an incident's frames: per node, or why a node's are missing. */
export interface StoredEvidence {
  readonly collectedAt: number;
  readonly fromMs: number;
  readonly toMs: number;
  readonly nodes: NodeEvidence[];
  readonly missing: MissingNode[];
}

/** An EvidenceSummary is what the incident page says of the stored frames. */
export interface EvidenceSummary {
  readonly collectedAt: number;
  readonly fromMs: number;
  readonly toMs: number;
  readonly nodes: readonly { readonly node: string; readonly frames: number; readonly missing: string | null }[];
}

interface Row {
  node: string;
  collected_at: number;
  from_ms: number;
  to_ms: number;
  missing: string | null;
  truncated: number;
  held_from: number | null;
  frames: string;
}

/** EvidenceRepo keeps incidents' frames; they go with their incident when retention deletes it. */
export class EvidenceRepo {
  constructor(readonly db: Db) {}

  /** put replaces what is stored for `incidentId` with one collection, in one transaction. */
  async put(incidentId: number, e: StoredEvidence): Promise<void> {
    await this.db.tx(async (t) => {
      await t.run("DELETE FROM incident_evidence WHERE incident_id = ?", [incidentId]);
      const insert = (
        node: string,
        missing: string | null,
        truncated: boolean,
        heldFrom: number | null,
        frames: readonly EvidenceFrame[],
      ) =>
        t.run(
          "INSERT INTO incident_evidence (incident_id, node, collected_at, from_ms, to_ms, missing, truncated, held_from, frame_count, frames) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
          [incidentId, node, e.collectedAt, e.fromMs, e.toMs, missing, truncated ? 1 : 0, heldFrom, frames.length, JSON.stringify(frames)],
        );
      for (const n of e.nodes) await insert(n.node, null, n.truncated, n.heldFromMs, n.frames);
      for (const m of e.missing) await insert(m.node, m.why, false, null, []);
    });
  }

  /** summary says what is stored for `incidentId` without reading the frames: per node, how many or why none. */
  async summary(incidentId: number): Promise<EvidenceSummary | null> {
    const rows = await this.db.all<{
      node: string;
      collected_at: number;
      from_ms: number;
      to_ms: number;
      missing: string | null;
      frame_count: number;
    }>("SELECT node, collected_at, from_ms, to_ms, missing, frame_count FROM incident_evidence WHERE incident_id = ? ORDER BY node", [
      incidentId,
    ]);
    const first = rows[0];
    if (first === undefined) return null;
    return {
      collectedAt: first.collected_at,
      fromMs: first.from_ms,
      toMs: first.to_ms,
      nodes: rows.map((r) => ({ node: r.node, frames: r.frame_count, missing: r.missing })),
    };
  }

  /** get returns what is stored for `incidentId`, null when nothing is. */
  async get(incidentId: number): Promise<StoredEvidence | null> {
    const rows = await this.db.all<Row>(
      "SELECT node, collected_at, from_ms, to_ms, missing, truncated, held_from, frames FROM incident_evidence WHERE incident_id = ? ORDER BY node",
      [incidentId],
    );
    const first = rows[0];
    if (first === undefined) return null;
    const nodes: NodeEvidence[] = [];
    const missing: MissingNode[] = [];
    for (const r of rows) {
      if (r.missing !== null) missing.push({ node: r.node, why: r.missing });
      else {
        const frames = JSON.parse(r.frames) as EvidenceFrame[];
        nodes.push({ node: r.node, frames, truncated: r.truncated === 1, heldFromMs: r.held_from });
      }
    }
    return { collectedAt: first.collected_at, fromMs: first.from_ms, toMs: first.to_ms, nodes, missing };
  }
}
