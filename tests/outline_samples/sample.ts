export interface Options {
  verbose: boolean;
  run(x: string): Promise<void>;
}

export type Id = string | number;

enum Color { Red, Green }

/** Greets. */
export async function greet<T extends object>(who: T, opts?: Options): Promise<string> {
  return "hi";
}

export abstract class Repo<T> implements Store<T> {
  private items: T[] = [];
  abstract find(id: Id): T | undefined;
  @log()
  save(item: T): void {
    this.items.push(item);
  }
}

declare function external(x: number): string;

namespace NS {
  export function inner(): void {}
}

export const handler = async (req: Request): Promise<Response> => {
  return new Response();
};
