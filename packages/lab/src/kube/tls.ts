import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A SelfSigned certificate for 127.0.0.1; the certificate is its own CA (certificate-authority-data in kubeconfig). */
export interface SelfSigned {
  readonly cert: string;
  readonly key: string;
}

/**
 * selfSigned makes a throwaway P-256 certificate for 127.0.0.1 and localhost with openssl. The test API server must
 * speak TLS: kubectl (client-go) sends no bearer token over plain HTTP.
 */
export function selfSigned(): SelfSigned {
  const dir = mkdtempSync(join(tmpdir(), "whohas-tls-"));
  try {
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=whohas-test-apiserver",
        "-addext",
        "subjectAltName=IP:127.0.0.1,DNS:localhost",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
      ],
      { stdio: "ignore" },
    );
    return { cert: readFileSync(join(dir, "cert.pem"), "utf8"), key: readFileSync(join(dir, "key.pem"), "utf8") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
