import { Link } from "react-router";
import { PageTitle } from "../components/ui";

export function NotFound() {
  return (
    <section>
      <PageTitle>Page not found</PageTitle>
      <p>There is no screen at this address.</p>
      <p>
        <Link to="/">Go to the start page</Link>
      </p>
    </section>
  );
}
