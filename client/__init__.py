"""memd's clients: the hook client, memctl, and the paths and transport they share."""
