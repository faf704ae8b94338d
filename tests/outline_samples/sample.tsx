import React from "react";

type Props = { name: string };

export function Hello({ name }: Props) {
  return <div>Hello {name}</div>;
}

export const App = () => {
  return <Hello name="x" />;
};
