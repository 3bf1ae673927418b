import { Dashboard } from "~/components/dashboard";

export const dynamic = "force-dynamic";

export default function Page() {
  return (
    <main>
      <Dashboard />
    </main>
  );
}
