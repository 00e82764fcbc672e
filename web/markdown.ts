// Model output as Markdown: parsed by marked, code highlighted by highlight.js, LaTeX (`$…$`,
// `$$…$$`, `\(…\)`, `\[…\]`) typeset by KaTeX as MathML (which the browser draws itself: no font
// files to serve), and sanitised by DOMPurify before it reaches the page, so model output never
// runs as HTML. Links open in a new tab, without a handle on this page.
import { Marked, type TokenizerAndRendererExtension } from "marked";
import DOMPurify from "dompurify";
import hljs from "highlight.js/lib/common";
import katex from "katex";

const tex = (source: string, displayMode: boolean) => katex.renderToString(source, { displayMode, output: "mathml", throwOnError: false });

/** `$$…$$` / `\[…\]` on lines of their own. */
const blockMath: TokenizerAndRendererExtension = {
  name: "blockMath",
  level: "block",
  start: (src) => src.match(/\$\$|\\\[/)?.index,
  tokenizer(src) {
    const m = /^(?:\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\])[ \t]*(?:\n|$)/.exec(src);
    if (m) return { type: "blockMath", raw: m[0], text: (m[1] ?? m[2])!.trim() };
  },
  renderer: (token) => `<p class="math">${tex(token.text as string, true)}</p>`,
};

/** `$…$` (not a price: no space inside the dollars, no digit right after the closing one) and `\(…\)`. */
const inlineMath: TokenizerAndRendererExtension = {
  name: "inlineMath",
  level: "inline",
  start: (src) => src.match(/\$|\\\(/)?.index,
  tokenizer(src) {
    const m = /^(?:\$\$([^$]+?)\$\$|\$(?!\s)([^$\n]+?)(?<!\s)\$(?!\d)|\\\(([\s\S]+?)\\\))/.exec(src);
    if (m) return { type: "inlineMath", raw: m[0], text: m[1] ?? m[2] ?? m[3]!, display: m[1] !== undefined };
  },
  renderer: (token) => tex(token.text as string, Boolean(token.display)),
};

const marked = new Marked({
  gfm: true,
  breaks: true,
  extensions: [blockMath, inlineMath],
  renderer: {
    code({ text, lang }) {
      const language = lang && hljs.getLanguage(lang) ? lang : undefined;
      const html = language ? hljs.highlight(text, { language }).value : hljs.highlightAuto(text).value;
      return `<pre><code class="hljs${language ? ` language-${language}` : ""}">${html}</code></pre>`;
    },
  },
});

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

// Speech an Omni collection made arrives as `<audio>data:audio/…;base64,…</audio>` (protocols/omni.ts).
// Matched in marked's output, where a code block's `<` is already escaped, so only real tags become players.
const AUDIO = /<audio>\s*(data:audio\/[\w.+-]+;base64,[A-Za-z0-9+/=]+)\s*<\/audio>/g;

export function renderMarkdown(text: string): string {
  const html = (marked.parse(text, { async: false }) as string).replace(AUDIO, '<audio controls src="$1"></audio>');
  // DOMPurify allows data: URIs on <audio> and <img> src by default, so generated media survive;
  // `target` is added after sanitising, by the hook above.
  return DOMPurify.sanitize(html, { USE_PROFILES: { html: true, mathMl: true } });
}
