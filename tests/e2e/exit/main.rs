//! End-to-end tests of the exit gate on the local control plane: one notification per
//! completion, restarts, load, faults at every step of the action path, delivery, and what a
//! receiver can check; the NATS JetStream sink on a real nats-server.

mod delivery;
mod faults;
mod gate;
mod load;
mod nats;
mod observe;
mod restart;
mod trust;
