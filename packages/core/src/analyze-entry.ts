// @whohas/core/analyze: what `whohas analyze` needs and nothing more, so the command starts without loading the wire
// schemas (zod) or the YAML parser: start-up is a third of the run time on a 2,000,000-frame capture otherwise.
export { CaptureAnalysis, SEVERE_FINDINGS, analyzeExitCode, toJson, toTable } from "./judge/capture-analysis.js";
export { isIP, isMac } from "./packet/addr.js";
export { normalizeIpKey } from "./net/ip-key.js";
