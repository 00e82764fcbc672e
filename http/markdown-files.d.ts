// The generated markdown pages, imported `with { type: "text" }` (http/reference.ts): each is its text.
declare module "*.md" {
  const text: string;
  export default text;
}
