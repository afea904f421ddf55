"""Intake: what a delivered file must be before anything is stored (the door, archives, streamed
uploads), the jobs that carry it and what a watched folder's listing means."""
