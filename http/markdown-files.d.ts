// The generated markdown pages, imported `with { type: "file" }` (http/reference.ts): each is its file's path.
declare module "*.md" {
  const path: string;
  export default path;
}
