"""What every stage shares: settings, identifiers, errors that name the problem, secrets kept in
memory, endpoint key rotation and planned text edits."""
