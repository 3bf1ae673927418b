// @whohas/lab: the network lab used by the demo, the integration tests and the e2e tests.
export { createLab, collectGarbage, requireRoot, CLIENT_IP, CLIENT_IP6, vipAt, vip6At, type Lab, type LabNode } from "./lab.js";
export { startStack, freePort, HUB_BIN, REQUESTER, type Stack, type StackOptions } from "./stack.js";
export { startLoneHub, type LoneHub } from "./lone-hub.js";
export { observationsJson, observationsMessage, type SegmentPlace } from "./agent-messages.js";
export { parseVlanIp, vlanIpText, type VlanIp } from "./trunk.js";
export { labNames, labIdOfNs, unixWsUrl, LAB_PREFIX } from "./naming.js";
export { inNs, run } from "./sh.js";
export { CHROMIUM, CHROMIUM_ARGS } from "./chromium.js";
export { listening, startTcpdump, type Tcpdump } from "./tcpdump.js";
export { startPostgres, postgresAvailable, type TestPostgres } from "./postgres.js";
export { startTestApiServer, type TestApiServer, type TestApiServerOptions, type ForbiddenRule, type PendingWrite } from "./kube/server.js";
