import {
  EVIDENCE_MESSAGE_BYTES,
  WIRE_VERSION,
  evidenceFrameBytes,
  type EvidenceAnswer,
  type EvidenceFrame,
  type EvidenceRequest,
} from "@whohas/core";
import type { FrameRing } from "./ring.js";

/**
 * answerEvidence is the evidence message that answers `req` from `ring` (null: evidence turned off, nothing held):
 * the frames it asks for, the earliest first, cut where the request's maxBytes or one message the hub accepts
 * (EVIDENCE_MESSAGE_BYTES of JSON) ends.
 */
export function answerEvidence(ring: FrameRing | null, req: EvidenceRequest): EvidenceAnswer {
  const answer = { v: WIRE_VERSION, type: "evidence", id: req.id } as const;
  if (ring === null) return { ...answer, frames: [], truncated: false, heldFromMs: null };
  const selected = ring.select(req.ip, req.vlan, req.fromMs, req.toMs, req.maxBytes);
  const frames: EvidenceFrame[] = [];
  let json = 0;
  for (const f of selected.frames) {
    json += evidenceFrameBytes(f.data.length, f.iface);
    if (json > EVIDENCE_MESSAGE_BYTES) break;
    const data = Buffer.from(f.data.buffer, f.data.byteOffset, f.data.byteLength).toString("base64");
    frames.push({ tNs: f.tNs.toString(), iface: f.iface, vlan: f.vlan, data });
  }
  return { ...answer, frames, truncated: selected.truncated || frames.length < selected.frames.length, heldFromMs: selected.heldFromMs };
}
