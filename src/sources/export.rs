//! `guidebook export`: the guidebook written in each agent's native rule format.
