//! Placeholder until the Seatbelt profile lands (being written now).
