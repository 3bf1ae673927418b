import { Counter, Gauge, Registry } from "prom-client";
import type { Hub } from "./hub/hub.js";

/** HubMetrics are the hub's Prometheus series; the gauges are read from the hub at scrape time. */
export class HubMetrics {
  readonly registry = new Registry();
  readonly messages = new Counter({ name: "whohas_hub_agent_messages_total", help: "Agent messages accepted, by type.", labelNames: ["type"], registers: [this.registry] });
  readonly rejected = new Counter({ name: "whohas_hub_agent_rejected_total", help: "Agent connections refused or closed, by reason.", labelNames: ["reason"], registers: [this.registry] });

  constructor(hub: Hub) {
    const agents = new Gauge({
      name: "whohas_hub_agents",
      help: "Agents known to the hub, by state.",
      labelNames: ["state"],
      registers: [this.registry],
      collect: () => {
        const all = hub.agents();
        agents.set({ state: "up" }, all.filter((a) => a.up).length);
        agents.set({ state: "down" }, all.filter((a) => !a.up).length);
      },
    });
    const ips = new Gauge({
      name: "whohas_hub_ips",
      help: "IPs seen, by state (multi-responder is the incident whohas exists for).",
      labelNames: ["state"],
      registers: [this.registry],
      collect: () => {
        ips.reset();
        for (const s of ["single", "multi-responder", "no-responder", "idle"]) ips.set({ state: s }, 0);
        for (const v of hub.ips()) ips.inc({ state: v.state });
      },
    });
    const responders = new Gauge({
      name: "whohas_hub_answering_responders",
      help: "MACs answering for each IP now (more than 1 means several nodes answer).",
      labelNames: ["ip"],
      registers: [this.registry],
      collect: () => {
        responders.reset();
        for (const v of hub.ips()) responders.set({ ip: v.ip }, v.responders.filter((r) => r.answering).length);
      },
    });
  }
}
