// A labelled select of models by id, as the Try it panels and Compare pick theirs.
import { displayName, type Model } from "./api.ts";

export function ModelPicker({ label, models, value, onChange }: { label: string; models: Model[]; value: string; onChange: (v: string) => void }) {
  return (
    <label>
      {label}{" "}
      <select value={value} onChange={(e) => onChange((e.target as HTMLSelectElement).value)}>
        {models.map((m) => (
          <option key={m.id} value={m.id}>
            {displayName(m)}
          </option>
        ))}
      </select>
    </label>
  );
}
