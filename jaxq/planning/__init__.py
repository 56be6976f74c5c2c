"""Static planning: the linear programs of the papers, their solutions, modes and trees."""
