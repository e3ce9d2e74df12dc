#pragma once
/// \file Forward declarations and the default aliases. Rule: include no other strata header here.
namespace strata {
template <class T>
class dense_row;
template <class T>
class sparse_row;
template <int S>
struct ssp;
struct bsp;
template <int S>
struct essp;
template <double V>
struct vap;
struct async;
class inproc;
template <class T>
class delayed;
template <class T>
class basic_system;
template <class... Options>
class system;
class worker;
template <class T>
class task;
}  // namespace strata
