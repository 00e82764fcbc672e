// Conversations kept in this browser's IndexedDB: larger than localStorage allows (images and
// generated media ride along), and each one written on its own.
const DB = "lemonade";
const STORE = "conversations";

let opened: Promise<IDBDatabase> | undefined;

function db(): Promise<IDBDatabase> {
  opened ??= new Promise((resolve, reject) => {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE, { keyPath: "id" });
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
  return opened;
}

async function run<T>(mode: IDBTransactionMode, act: (store: IDBObjectStore) => IDBRequest<T>): Promise<T> {
  const store = (await db()).transaction(STORE, mode).objectStore(STORE);
  return new Promise((resolve, reject) => {
    const req = act(store);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

export const conversations = {
  all: <T>() => run<T[]>("readonly", (s) => s.getAll() as IDBRequest<T[]>),
  put: (value: { id: string }) => run("readwrite", (s) => s.put(value)),
  delete: (id: string) => run("readwrite", (s) => s.delete(id)),
};
