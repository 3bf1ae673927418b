import { describe, expect, it } from "vitest";
import { UsageError, parsePluginArgs } from "../plugin/args.js";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConnectError, connect } from "../plugin/connect.js";
import {
  age,
  clean,
  incidentsTable,
  ipDetail,
  ipsTable,
  several,
  severeIncident,
  table,
  type ApiIncident,
  type ApiIp,
} from "../plugin/render.js";
import { ShapeError, asIncidents, asIp, asIps } from "../plugin/shape.js";

const SEVERE = ["multi-responder", "split-brain"];

const ip = (over: Partial<ApiIp>): ApiIp => ({
  key: "192.0.2.10",
  ip: "192.0.2.10",
  vlan: null,
  state: "single",
  services: [{ namespace: "shop", name: "web" }],
  announcer: "metallb-l2",
  expectedOwner: { node: "node-a", source: "metallb-status" },
  ownerUnknown: null,
  responders: [{ mac: "02:00:5e:00:00:0a", node: "node-a", answering: true, replies: 3, gratuitous: 0, lastSeen: 0, meanLatencyMs: 0.2 }],
  fastest: "02:00:5e:00:00:0a",
  findings: [],
  requests: 3,
  silentDropNodes: [],
  handovers: [],
  askers: [],
  ...over,
});

describe("kubectl whohas: the token", () => {
  const dir = mkdtempSync(join(tmpdir(), "whohas-plugin-token-"));
  const at = (over: Partial<Parameters<typeof connect>[0]>) =>
    connect({ ...parsePluginArgs(["ips", "--url", "http://127.0.0.1:3000"], {}).connection, ...over });
  const refused = async (over: Partial<Parameters<typeof connect>[0]>) => {
    try {
      await at(over);
    } catch (e) {
      expect(e).toBeInstanceOf(ConnectError);
      return (e as Error).message;
    }
    return "accepted";
  };

  it("is read from --token-file, one word, and a file with more is refused without being repeated", async () => {
    writeFileSync(join(dir, "ok"), "tok-123\n");
    expect((await at({ tokenFile: join(dir, "ok") })).token).toBe("tok-123");
    writeFileSync(join(dir, "two"), "abc-SECRET-token\n# made by ana for CI\n");
    const why = await refused({ tokenFile: join(dir, "two") });
    expect(why).toContain("is not one word of printable ASCII");
    expect(why).not.toContain("SECRET");
    expect(await refused({ tokenFile: join(dir, "none") })).toContain("no such file");
    expect(await refused({ token: "   " })).toContain("is empty");
    expect(await refused({})).toContain("no read-API token (--token-file, --token or WHOHAS_TOKEN)");
  });

  it("warns when it goes in the clear beyond this machine", async () => {
    expect((await at({ token: "t" })).warnings).toEqual([]);
    expect((await at({ token: "t", url: "http://hub.example:3000" })).warnings).toEqual([
      "the token goes to hub.example unencrypted (http://): use https:// beyond this machine",
    ]);
    expect((await at({ token: "t", url: "https://hub.example" })).warnings).toEqual([]);
  });
});

describe("kubectl whohas: arguments", () => {
  const parse = (...argv: string[]) => parsePluginArgs(argv, {});

  it("reads the commands, the dashboard's word for a state, an IP in a VLAN, and the way to the hub", () => {
    expect(parse("ips", "--state", "several-responders").command).toEqual({ kind: "ips", state: "multi-responder" });
    expect(parse("ips", "--state", "not-layer2").command).toEqual({ kind: "ips", state: "not-layer2" });
    expect(parse("ip", "2001:DB8::0010@30").command).toEqual({ kind: "ip", key: "2001:db8::10@30" });
    expect(parse("incidents", "--state", "open", "--limit", "5").command).toEqual({ kind: "incidents", state: "open", ip: null, limit: 5 });
    const c = parsePluginArgs(["ips", "-n", "ops", "--context", "prod"], { WHOHAS_TOKEN: "t", KUBECTL: "/opt/kubectl" }).connection;
    expect(c).toMatchObject({
      url: null,
      token: "t",
      namespace: "ops",
      context: "prod",
      service: "whohas-hub",
      port: 3000,
      kubectl: "/opt/kubectl",
    });
    expect(parsePluginArgs(["ips"], { WHOHAS_URL: "https://hub.example/whohas/" }).connection.url).toBe("https://hub.example/whohas");
    expect(parse().command).toEqual({ kind: "help" });
    // An empty WHOHAS_TOKEN (a CI variable that is not set) is no token: the Secret is asked instead.
    expect(parsePluginArgs(["ips"], { WHOHAS_TOKEN: "" }).connection.token).toBeNull();
  });

  it("refuses what it cannot use, saying what would do", () => {
    const refused = (argv: string[]) => {
      try {
        parse(...argv);
      } catch (e) {
        expect(e).toBeInstanceOf(UsageError);
        return (e as Error).message;
      }
      return "accepted";
    };
    expect(refused(["ips", "--state", "broken"])).toContain("an IP is single, multi-responder, no-responder, idle");
    expect(refused(["ip"])).toContain("which IP?");
    expect(refused(["ip", "10.0.0.300"])).toContain("is not an IP address");
    expect(refused(["ip", "192.0.2.1", "extra"])).toBe('unexpected argument "extra"');
    expect(refused(["incidents", "--limit", "0"])).toContain("from 1 to 1000");
    expect(refused(["ips", "-o", "yaml"])).toContain("table or json");
    expect(refused(["ips", "--url", "hub:3000"])).toContain("http:// or https:// URL");
    expect(refused(["ips", "--url", "https://ana:s3cret@hub.example"])).toBe(
      "--url: no user or password in the URL (the token goes in --token-file)",
    );
    expect(refused(["ips", "--token", "a", "--token-file", "b"])).toContain("give one of them");
    expect(refused(["list"])).toContain("unknown command");
    expect(refused(["ips", "--bogus"])).toContain("--bogus");
  });
});

describe("kubectl whohas: output", () => {
  it("shows control characters from the hub as text: no escape sequence or line of its own reaches the terminal", () => {
    const hostile = "node-2\x1b[2J\x1b[H\x1b]0;owned\x1b\\\nALL LoadBalancer IPs OK\r\x9b";
    expect(clean(hostile)).toBe("node-2\\x1b[2J\\x1b[H\\x1b]0;owned\\x1b\\\\x0aALL LoadBalancer IPs OK\\x0d\\x9b");
    const bad = ip({
      expectedOwner: { node: hostile, source: "kube-vip" },
      findings: [{ type: "wrong-owner", detail: hostile, firstSeen: 0, incidentId: 1 }],
    });
    for (const text of [ipsTable([bad], SEVERE), ipDetail(bad, 0), table(["A"], [[hostile]])]) {
      // eslint-disable-next-line no-control-regex
      expect(text).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/);
      expect(text).not.toMatch(/^ALL LoadBalancer IPs OK/m);
    }
  });

  it("refuses an answer that is not the read API's, naming the field", () => {
    const shape = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        expect(e).toBeInstanceOf(ShapeError);
        return (e as Error).message;
      }
      return "accepted";
    };
    expect(shape(() => asIps({ ips: [] }))).toBe("the answer is not a list");
    expect(shape(() => asIps([ip({}), null]))).toBe("the answer[1] is not an object");
    expect(shape(() => asIp({ ...ip({}), responders: [{ mac: 1 }] }))).toBe("the answer.responders[0].mac");
    expect(shape(() => asIncidents([{ id: 1 }]))).toBe("the answer[0].key");
    expect(shape(() => asIp(ip({})))).toBe("accepted");
  });

  it("aligns columns under their headers, three spaces apart", () => {
    expect(table(["A", "LONGER"], [["wide cell", "x"]])).toBe("A           LONGER\nwide cell   x\n");
  });

  it("flags an IP with several responders, by its state or a severe finding, and only those", () => {
    expect(several(ip({}), SEVERE)).toBe(false);
    expect(several(ip({ state: "multi-responder" }), SEVERE)).toBe(true);
    expect(several(ip({ findings: [{ type: "split-brain", detail: "", firstSeen: 0, incidentId: 1 }] }), SEVERE)).toBe(true);
    expect(several(ip({ findings: [{ type: "wrong-owner", detail: "", firstSeen: 0, incidentId: 1 }] }), SEVERE)).toBe(false);
    const text = ipsTable([ip({ state: "multi-responder" }), ip({ key: "192.0.2.11", services: [] })], SEVERE);
    expect(text.split("\n")[1]).toMatch(/^192\.0\.2\.10 +multi-responder! +shop\/web +node-a +node-a +-$/);
    expect(text.split("\n")[2]).toMatch(/^192\.0\.2\.11 +single +- +node-a/);
  });

  it("counts an incident as severe while a severe facet is open", () => {
    const inc = (over: Partial<ApiIncident>): ApiIncident => ({
      id: 1,
      key: "192.0.2.10",
      type: "wrong-owner",
      detail: "d",
      firstSeen: 0,
      lastSeen: 0,
      count: 1,
      resolvedAt: null,
      acknowledgedBy: null,
      ...over,
    });
    expect(severeIncident(inc({ type: "multi-responder" }), SEVERE)).toBe(true);
    // Named after the worst it ever held: what is open now decides (strictARP fixed, one wrong node still answering).
    const fixed = inc({
      type: "multi-responder",
      facets: [
        { type: "multi-responder", resolvedAt: 5 },
        { type: "wrong-owner", resolvedAt: null },
      ],
    });
    expect(severeIncident(fixed, SEVERE)).toBe(false);
    expect(incidentsTable([fixed], 60_000)).toMatch(/\n1 +open +wrong-owner +192\.0\.2\.10 /);
    expect(severeIncident(inc({ type: "multi-responder", resolvedAt: 5 }), SEVERE)).toBe(false);
    expect(severeIncident(inc({ facets: [{ type: "split-brain", resolvedAt: null }] }), SEVERE)).toBe(true);
    expect(severeIncident(inc({ facets: [{ type: "split-brain", resolvedAt: 3 }] }), SEVERE)).toBe(false);
    expect(incidentsTable([inc({ acknowledgedBy: "ana", detail: "x".repeat(150) })], 60_000)).toMatch(
      /open, ack ana .* 60s +60s +1 +x{99}…\n$/,
    );
  });

  it("says ages as kubectl does", () => {
    expect([age(0, 45_000), age(0, 130_000), age(0, 3 * 3_600_000), age(0, 5 * 86_400_000)]).toEqual(["45s", "2m", "3h", "5d"]);
  });
});
