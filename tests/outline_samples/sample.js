// Utilities for things.
import fs from "fs";

/**
 * Adds numbers.
 */
export function add(a, b) {
  return a + b;
}

function* gen() {
  yield 1;
}

export const mul = (a, b) => {
  return a * b;
};

const short = (x) => x + 1;
const NOT_A_FUNCTION = 42;

export default class Shape extends Base {
  constructor(name) {
    super();
    this.name = name;
  }

  static create(
    name,
    opts = {},
  ) {
    return new Shape(name);
  }

  get area() { return 0; }
}

const Klass = class {
  m() {}
};
