import { SettingsPage } from "~/components/settings";

export const dynamic = "force-dynamic";

export default function Settings() {
  return (
    <main>
      <h1>Settings</h1>
      <SettingsPage />
    </main>
  );
}
