// The web app: one page with a panel per task, switched by the address's #fragment, and a status bar.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import "./style.css";
import { Chat } from "./chat.tsx";
import { Models } from "./models.tsx";
import { Backends } from "./backends.tsx";
import { Logs } from "./logs.tsx";
import { Settings } from "./settings.tsx";
import { TryIt } from "./tryit.tsx";
import { StatusBar } from "./status.tsx";

const PANELS = [
  ["chat", "Chat"],
  ["models", "Model manager"],
  ["try", "Try it"],
  ["backends", "Backends"],
  ["logs", "Logs"],
  ["settings", "Settings"],
] as const;
type Panel = (typeof PANELS)[number][0];

const current = (): Panel => {
  const hash = location.hash.slice(1);
  return (PANELS.find(([id]) => id === hash)?.[0] ?? "chat") as Panel;
};

function App() {
  const [panel, setPanel] = useState<Panel>(current());
  useEffect(() => {
    const onHash = () => setPanel(current());
    addEventListener("hashchange", onHash);
    return () => removeEventListener("hashchange", onHash);
  }, []);
  const go = (p: Panel) => (location.hash = p);
  return (
    <div class="app">
      <header>
        <h1>Lemonade</h1>
        <nav aria-label="Panels">
          {PANELS.map(([id, label]) => (
            <button key={id} class={panel === id ? "tab active" : "tab"} aria-current={panel === id ? "page" : undefined} onClick={() => go(id)}>
              {label}
            </button>
          ))}
          <a class="tab" href="/docs">
            API docs
          </a>
        </nav>
      </header>
      <main>
        {panel === "chat" && <Chat onManageModels={() => go("models")} />}
        {panel === "models" && <Models />}
        {panel === "try" && <TryIt />}
        {panel === "backends" && <Backends />}
        {panel === "logs" && <Logs />}
        {panel === "settings" && <Settings />}
      </main>
      <StatusBar />
    </div>
  );
}

render(<App />, document.getElementById("app")!);
