import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { Playground } from "./Playground";
import { sessions } from "./sessions";
import "graphiql/style.css";
import "./playground.css";

createRoot(document.getElementById("playground")!).render(
  <StrictMode>
    <Playground sessions={sessions()} storage={localStorage} />
  </StrictMode>,
);
