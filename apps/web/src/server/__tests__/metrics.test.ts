import { describe, expect, it } from "vitest";
import { startHub } from "./security/harness.js";

describe("/metrics", () => {
  it("still answers when the store cannot be read, with the incident counts it had", async () => {
    const t = await startHub();
    const before = await fetch(t.metrics).then((r) => r.text());
    expect(before).toContain("whohas_hub_agents");
    // As a PostgreSQL out of reach, or a SQLite file that cannot be read: every query fails.
    await t.hub.store.db.close();
    const r = await fetch(t.metrics, { signal: AbortSignal.timeout(5000) });
    expect(r.status).toBe(200);
    expect(await r.text()).toContain("whohas_hub_agents");
  });
});
