"""One document's pipeline as plain functions (profile → parse → structure → artifacts), and the
processes its parse runs in."""
