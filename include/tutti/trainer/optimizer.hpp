//! @file optimizer.hpp  sgd, adam (and AdamW) with PyTorch's update rules, and lars<Inner> (LARS /
//! LARC) with NVIDIA apex's, on the float spans of trainer::parameter.
//!
//! Every optimiser steps a list of parameters with one learning rate each (or one for all), keeps
//! its state per parameter — made at the first step from the parameters' names and lengths, which
//! later steps and loads must then match — and saves and loads all of it in a binary stream that
//! round-trips bit for bit (native byte order: checkpoints move between like machines).
//!
//! Element loops are plain non-template functions over float pointers (a parameter's value,
//! gradient and state never overlap: __restrict), branch-free inside, so the compiler vectorises
//! them; coefficients are computed once per parameter in double and rounded to float, as PyTorch
//! rounds a Python scalar to the tensor's type. Norms accumulate in double.
//!
//! One file per optimiser under trainer/optimizer/ (sgd.hpp, adam.hpp, lars.hpp), beside what they
//! share: the argument checks (arguments.hpp), and the per-parameter state with its stream format
//! and the checked step/save/load that sgd and adam show alike (state.hpp); what an optimiser is,
//! in optimizer/concepts.hpp.
#pragma once
#include "tutti/trainer/optimizer/adam.hpp"
#include "tutti/trainer/optimizer/concepts.hpp"
#include "tutti/trainer/optimizer/lars.hpp"
#include "tutti/trainer/optimizer/sgd.hpp"
