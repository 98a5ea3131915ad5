//! `guidebook import`: native rule files turned into guideline.yaml files.
