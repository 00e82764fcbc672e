// Model output as Markdown: parsed by marked, code highlighted by highlight.js, and sanitised by
// DOMPurify before it reaches the page, so model output never runs as HTML.
import { Marked } from "marked";
import DOMPurify from "dompurify";
import hljs from "highlight.js/lib/common";

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    code({ text, lang }) {
      const language = lang && hljs.getLanguage(lang) ? lang : undefined;
      const html = language ? hljs.highlight(text, { language }).value : hljs.highlightAuto(text).value;
      return `<pre><code class="hljs${language ? ` language-${language}` : ""}">${html}</code></pre>`;
    },
  },
});

// Speech an Omni collection made arrives as `<audio>data:audio/…;base64,…</audio>` (protocols/omni.ts).
// Matched in marked's output, where a code block's `<` is already escaped, so only real tags become players.
const AUDIO = /<audio>\s*(data:audio\/[\w.+-]+;base64,[A-Za-z0-9+/=]+)\s*<\/audio>/g;

export function renderMarkdown(text: string): string {
  const html = (marked.parse(text, { async: false }) as string).replace(AUDIO, '<audio controls src="$1"></audio>');
  // DOMPurify allows data: URIs on <audio> and <img> src by default, so generated media survive.
  return DOMPurify.sanitize(html, { USE_PROFILES: { html: true } });
}
