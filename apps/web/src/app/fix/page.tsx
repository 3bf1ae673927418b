import { RemediationPage } from "~/components/remediation";

export const dynamic = "force-dynamic";

export default function Fix() {
  return (
    <main>
      <h1>Fix: strictARP</h1>
      <RemediationPage />
    </main>
  );
}
