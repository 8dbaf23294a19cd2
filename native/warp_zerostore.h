// warp_zerostore: per-kernel store adjoints for NVIDIA Warp.
//
// Warp's forward stores are left untouched; only their adjoints are replaced, and only in the generated
// code of kernels (and of the @wp.func helpers they call) whose effective zero_store mode is True or False.
// For each store form, the two adjoints sit side by side:
//   adj_X_zero        reads the gradient element the store overwrote into the stored value's adjoint,
//                     then sets that element to zero, in the buffer it read (the caller's adjoint buffer
//                     when one was passed, else the array's own .grad); arrays created with
//                     retain_grad=True (Warp >= 1.13) are read but not zeroed.
//   adj_X_accumulate  reads the same element and never zeroes it (Warp <= 1.12 semantics).
//
// The Python side (codegen/native.py) prepends the defines WP_ZS_HAS_RETAIN_GRAD, WP_ZS_TILE_INDEX_T,
// WP_ZS_HAS_TILE_GRAD_ZERO_GLOBAL, WP_ZS_TILE_MAP_ADJOINT_DISPATCHES and WP_ZS_TILE_MAP_TAKES_RESULT, which describe
// the installed Warp, before this text. No function-style casts: Warp <= 1.12 `#define float(x)` and `int(x)` in its headers.

#ifndef WARP_ZEROSTORE_H
#define WARP_ZEROSTORE_H

namespace wp
{
namespace zs
{

// ---------------------------------------------------------------------------------------------------------
// Shared pieces

template <typename T> CUDA_CALLABLE inline bool may_zero(const array_t<T>& buf)
{
#if WP_ZS_HAS_RETAIN_GRAD
    return !(buf.flags & ARRAY_FLAG_RETAIN_GRAD);
#else
    return true;
#endif
}

// Adds one gradient element (or one slot of it) into the stored value's adjoint and, for Zero, zeroes it.
template <bool Zero, typename T, typename Slot, typename AdjSlot>
CUDA_CALLABLE inline void read_slot(const array_t<T>& buf, Slot& slot, AdjSlot& adj_value)
{
    adj_value += slot;
    if (Zero && may_zero(buf))
        slot = Slot {};
}

// The element read is the caller's adjoint buffer's when one was passed, else buf.grad's. Each buffer gets its
// own branch, as in Warp's own adj_array_store: folding both into one pointer chosen at run time made the
// zeroing twin 1.15x slower than stock Warp 1.19 on CPU (benchmarks/bench_zeroing.py, docs/benchmarks.md).
template <bool Zero, typename T, typename... Ints>
CUDA_CALLABLE inline void store_adjoint(const array_t<T>& buf, const array_t<T>& adj_buf, T& adj_value, Ints... idx)
{
    if (adj_buf.data)
        read_slot<Zero>(buf, index(adj_buf, idx...), adj_value);
    else if (buf.grad)
        read_slot<Zero>(buf, index_grad(buf, idx...), adj_value);
}

// Component ("slot") stores such as a[i].x = v or a[i][j, k] = v: `access` maps an element to the slot.
template <bool Zero, typename T, typename Access, typename AdjSlot, typename... Ints>
CUDA_CALLABLE inline void
slot_store_adjoint(const array_t<T>& buf, const array_t<T>& adj_buf, AdjSlot& adj_value, Access access, Ints... idx)
{
    if (adj_buf.data)
        read_slot<Zero>(buf, access(index(adj_buf, idx...)), adj_value);
    else if (buf.grad)
        read_slot<Zero>(buf, access(index_grad(buf, idx...)), adj_value);
#if FP_CHECK
    if (!isfinite(adj_value)) {
        printf("%s:%d - %s(arr, ...) ", __FILE__, __LINE__, __FUNCTION__);
        print(adj_value);
        printf(")\n");
        assert(0);
    }
#endif
}

// ---------------------------------------------------------------------------------------------------------
// a[i] = v, a[i, j] = v, ... on wp.array: the adjoint of wp::array_store.

template <typename T>
CUDA_CALLABLE inline void
adj_array_store_zero(const array_t<T>& buf, int i, T value, const array_t<T>& adj_buf, int adj_i, T& adj_value)
{
    store_adjoint<true>(buf, adj_buf, adj_value, i);
    FP_VERIFY_ADJ_1(value, adj_value)
}
template <typename T>
CUDA_CALLABLE inline void
adj_array_store_accumulate(const array_t<T>& buf, int i, T value, const array_t<T>& adj_buf, int adj_i, T& adj_value)
{
    store_adjoint<false>(buf, adj_buf, adj_value, i);
    FP_VERIFY_ADJ_1(value, adj_value)
}

template <typename T>
CUDA_CALLABLE inline void adj_array_store_zero(
    const array_t<T>& buf, int i, int j, T value, const array_t<T>& adj_buf, int adj_i, int adj_j, T& adj_value
)
{
    store_adjoint<true>(buf, adj_buf, adj_value, i, j);
    FP_VERIFY_ADJ_2(value, adj_value)
}
template <typename T>
CUDA_CALLABLE inline void adj_array_store_accumulate(
    const array_t<T>& buf, int i, int j, T value, const array_t<T>& adj_buf, int adj_i, int adj_j, T& adj_value
)
{
    store_adjoint<false>(buf, adj_buf, adj_value, i, j);
    FP_VERIFY_ADJ_2(value, adj_value)
}

template <typename T>
CUDA_CALLABLE inline void adj_array_store_zero(
    const array_t<T>& buf, int i, int j, int k, T value,
    const array_t<T>& adj_buf, int adj_i, int adj_j, int adj_k, T& adj_value
)
{
    store_adjoint<true>(buf, adj_buf, adj_value, i, j, k);
    FP_VERIFY_ADJ_3(value, adj_value)
}
template <typename T>
CUDA_CALLABLE inline void adj_array_store_accumulate(
    const array_t<T>& buf, int i, int j, int k, T value,
    const array_t<T>& adj_buf, int adj_i, int adj_j, int adj_k, T& adj_value
)
{
    store_adjoint<false>(buf, adj_buf, adj_value, i, j, k);
    FP_VERIFY_ADJ_3(value, adj_value)
}

template <typename T>
CUDA_CALLABLE inline void adj_array_store_zero(
    const array_t<T>& buf, int i, int j, int k, int l, T value,
    const array_t<T>& adj_buf, int adj_i, int adj_j, int adj_k, int adj_l, T& adj_value
)
{
    store_adjoint<true>(buf, adj_buf, adj_value, i, j, k, l);
    FP_VERIFY_ADJ_4(value, adj_value)
}
template <typename T>
CUDA_CALLABLE inline void adj_array_store_accumulate(
    const array_t<T>& buf, int i, int j, int k, int l, T value,
    const array_t<T>& adj_buf, int adj_i, int adj_j, int adj_k, int adj_l, T& adj_value
)
{
    store_adjoint<false>(buf, adj_buf, adj_value, i, j, k, l);
    FP_VERIFY_ADJ_4(value, adj_value)
}

// indexedarray / fabricarray stores: Warp does not differentiate through these array kinds (its own
// adjoints are empty and the backward pass receives no gradient buffer for them), so neither mode has a
// gradient element to read or zero. Explicit no-ops, with the same parameter lists as Warp's own, so that
// flagged kernels that use them still compile and overload resolution matches Warp's.
#define WP_ZS_GENERIC_ARRAY_STORE(NAME)                                                                        \
    template <template <typename> class A1, template <typename> class A2, typename T>                          \
    CUDA_CALLABLE inline void NAME(const A1<T>& buf, int i, T value, const A2<T>& adj_buf, int adj_i,          \
                                   T& adj_value)                                                               \
    {                                                                                                          \
    }                                                                                                          \
    template <template <typename> class A1, template <typename> class A2, typename T>                          \
    CUDA_CALLABLE inline void NAME(const A1<T>& buf, int i, int j, T value, const A2<T>& adj_buf, int adj_i,   \
                                   int adj_j, T& adj_value)                                                    \
    {                                                                                                          \
    }                                                                                                          \
    template <template <typename> class A1, template <typename> class A2, typename T>                          \
    CUDA_CALLABLE inline void NAME(const A1<T>& buf, int i, int j, int k, T value, const A2<T>& adj_buf,       \
                                   int adj_i, int adj_j, int adj_k, T& adj_value)                              \
    {                                                                                                          \
    }                                                                                                          \
    template <template <typename> class A1, template <typename> class A2, typename T>                          \
    CUDA_CALLABLE inline void NAME(const A1<T>& buf, int i, int j, int k, int l, T value, const A2<T>& adj_buf,\
                                   int adj_i, int adj_j, int adj_k, int adj_l, T& adj_value)                   \
    {                                                                                                          \
    }

WP_ZS_GENERIC_ARRAY_STORE(adj_array_store_zero)
WP_ZS_GENERIC_ARRAY_STORE(adj_array_store_accumulate)
#undef WP_ZS_GENERIC_ARRAY_STORE

// ---------------------------------------------------------------------------------------------------------
// a[i].x = v, a[i][j] = v, a[i][j, k] = v: the adjoint of a component store into an array element.
// Warp >= 1.19 emits wp::adj_array_store_slot for these; on older Warp the rewrite emits
// wp::zs::adj_component_store, whose stock form drops the gradient exactly as those versions do.
// The _zero / _accumulate twins read the overwritten slot of the gradient element into the stored value's
// adjoint; _zero then zeroes that slot (not the rest of the element).

// The forward is Warp's own (address, indexref, store); only the reverse statement is added.
template <typename T, typename Access, typename AdjSlot, typename... Ints>
CUDA_CALLABLE inline void
adj_component_store(const array_t<T>& buf, const array_t<T>& adj_buf, AdjSlot& adj_value, Access access, Ints... idx)
{
}
template <typename T, typename Access, typename AdjSlot, typename... Ints>
CUDA_CALLABLE inline void adj_array_store_slot_zero(
    const array_t<T>& buf, const array_t<T>& adj_buf, AdjSlot& adj_value, Access access, Ints... idx
)
{
    slot_store_adjoint<true>(buf, adj_buf, adj_value, access, idx...);
}
template <typename T, typename Access, typename AdjSlot, typename... Ints>
CUDA_CALLABLE inline void adj_array_store_slot_accumulate(
    const array_t<T>& buf, const array_t<T>& adj_buf, AdjSlot& adj_value, Access access, Ints... idx
)
{
    slot_store_adjoint<false>(buf, adj_buf, adj_value, access, idx...);
}

// ---------------------------------------------------------------------------------------------------------
// wp.tile_store(a, t, offset=...): the adjoint of wp::tile_store. A tile store overwrites a block of global
// memory, so each element of the block behaves as a[i] = v. All threads of the block take part.
// WP_ZS_TILE_INDEX_T is the element-index type of the installed Warp's tile_global_t::index;
// WP_ZS_HAS_TILE_GRAD_ZERO_GLOBAL says whether its tiles have grad_zero_global (Warp >= 1.10).

template <bool Zero, typename T, typename AdjTile, typename Coord>
CUDA_CALLABLE inline void tile_store_adjoint(array_t<T>& dest, Coord c, array_t<T>& adj_dest, AdjTile& adj_t)
{
    tile_global_t<T, typename AdjTile::Layout::Shape> block(dest, c);
    if (adj_dest.data)
        block.data.grad = adj_dest.data;  // a caller's buffer: read, and zeroed, instead of dest.grad
    if (block.data.grad == nullptr)
        return;

    adj_t.grad_add(block);

    if (Zero && may_zero(dest)) {
#if WP_ZS_HAS_TILE_GRAD_ZERO_GLOBAL
        adj_t.grad_zero_global(block);  // Warp >= 1.10: each thread zeroes the elements it read
#else
        using Strided = tile_layout_strided_t<typename AdjTile::Layout::Shape>;
        WP_TILE_SYNC();  // every thread has read its part of the block
        for (int linear = WP_TILE_THREAD_IDX; linear < Strided::Size; linear += WP_TILE_BLOCK_DIM) {
            WP_ZS_TILE_INDEX_T idx;
            if (block.index(Strided::coord_from_linear(linear), idx))
                block.data.grad[idx] = T {};
        }
        WP_TILE_SYNC();
#endif
    }
}

template <typename T, typename Tile, typename AdjTile, typename Coord>
CUDA_CALLABLE inline void
adj_tile_store_zero(array_t<T>& dest, Coord c, Tile& t, array_t<T>& adj_dest, Coord adj_c, AdjTile& adj_t)
{
    tile_store_adjoint<true>(dest, c, adj_dest, adj_t);
}
template <typename T, typename Tile, typename AdjTile, typename Coord>
CUDA_CALLABLE inline void
adj_tile_store_accumulate(array_t<T>& dest, Coord c, Tile& t, array_t<T>& adj_dest, Coord adj_c, AdjTile& adj_t)
{
    tile_store_adjoint<false>(dest, c, adj_dest, adj_t);
}

// The integer-offset forms Warp's code generator emits, 1 to 4 dimensions, for both modes.
#define WP_ZS_TILE_STORE_FORMS(MODE, ZERO)                                                                      \
    template <typename T, typename Tile, typename AdjTile>                                                     \
    CUDA_CALLABLE inline void adj_tile_store_##MODE(                                                           \
        array_t<T>& dest, int x, Tile& t, array_t<T>& adj_dest, int adj_x, AdjTile& adj_t)                   \
    {                                                                                                          \
        tile_store_adjoint<ZERO>(dest, tile_coord(x), adj_dest, adj_t);                                       \
    }                                                                                                          \
    template <typename T, typename Tile, typename AdjTile>                                                     \
    CUDA_CALLABLE inline void adj_tile_store_##MODE(                                                           \
        array_t<T>& dest, int x, int y, Tile& t, array_t<T>& adj_dest, int adj_x, int adj_y, AdjTile& adj_t) \
    {                                                                                                          \
        tile_store_adjoint<ZERO>(dest, tile_coord(x, y), adj_dest, adj_t);                                    \
    }                                                                                                          \
    template <typename T, typename Tile, typename AdjTile>                                                     \
    CUDA_CALLABLE inline void adj_tile_store_##MODE(                                                           \
        array_t<T>& dest, int x, int y, int z, Tile& t,                                                        \
        array_t<T>& adj_dest, int adj_x, int adj_y, int adj_z, AdjTile& adj_t)                                \
    {                                                                                                          \
        tile_store_adjoint<ZERO>(dest, tile_coord(x, y, z), adj_dest, adj_t);                                 \
    }                                                                                                          \
    template <typename T, typename Tile, typename AdjTile>                                                     \
    CUDA_CALLABLE inline void adj_tile_store_##MODE(                                                           \
        array_t<T>& dest, int x, int y, int z, int w, Tile& t,                                                 \
        array_t<T>& adj_dest, int adj_x, int adj_y, int adj_z, int adj_w, AdjTile& adj_t)                     \
    {                                                                                                          \
        tile_store_adjoint<ZERO>(dest, tile_coord(x, y, z, w), adj_dest, adj_t);                              \
    }

WP_ZS_TILE_STORE_FORMS(zero, true)
WP_ZS_TILE_STORE_FORMS(accumulate, false)
#undef WP_ZS_TILE_STORE_FORMS

// ---------------------------------------------------------------------------------------------------------
// wp.tile_store_indexed(a, indices, t, offset=..., axis=...): the adjoint of wp::tile_store_indexed.

template <bool Zero, typename T, int M, typename Tile, typename AdjTile, typename Coord>
CUDA_CALLABLE inline void tile_store_indexed_adjoint(
    array_t<T>& dest, tile_shared_t<int, tile_layout_strided_t<tile_shape_t<M>>>& indices, int axis, Coord offset,
    array_t<T>& adj_dest, AdjTile& adj_t
)
{
    if (adj_dest.data)
        dest.grad = adj_dest.data;
    if (dest.grad == nullptr)
        return;

    const bool zero = Zero && may_zero(dest);
    auto adj_reg = tile_register_like<Tile>();
    adj_reg.apply([&](int reg, auto c) {
        WP_ZS_TILE_INDEX_T i;
        if (compute_index(dest, indices, axis, offset, c, i)) {
            adj_reg.data[reg] += dest.grad[i];
            if (zero)
                dest.grad[i] = T {};
        }
    });
    adj_t.grad_add(adj_reg);
}

#define WP_ZS_TILE_STORE_INDEXED_FORMS(MODE, ZERO)                                                              \
    template <typename T, int M, typename Tile, typename AdjTile, typename Coord>                              \
    CUDA_CALLABLE inline void adj_tile_store_indexed_##MODE(                                                   \
        array_t<T>& dest, tile_shared_t<int, tile_layout_strided_t<tile_shape_t<M>>>& indices, int axis,      \
        Coord offset, Tile& t, array_t<T>& adj_dest,                                                           \
        tile_shared_t<int, tile_layout_strided_t<tile_shape_t<M>>>& adj_indices, int adj_axis,               \
        Coord adj_offset, AdjTile& adj_t)                                                                      \
    {                                                                                                          \
        tile_store_indexed_adjoint<ZERO, T, M, Tile>(dest, indices, axis, offset, adj_dest, adj_t);           \
    }                                                                                                          \
    template <typename T, int M, typename Tile, typename AdjTile>                                              \
    CUDA_CALLABLE inline void adj_tile_store_indexed_##MODE(                                                   \
        array_t<T>& dest, tile_shared_t<int, tile_layout_strided_t<tile_shape_t<M>>>& indices, int axis,      \
        int x, Tile& t, array_t<T>& adj_dest,                                                                  \
        tile_shared_t<int, tile_layout_strided_t<tile_shape_t<M>>>& adj_indices, int adj_axis, int adj_x,    \
        AdjTile& adj_t)                                                                                        \
    {                                                                                                          \
        tile_store_indexed_adjoint<ZERO, T, M, Tile>(dest, indices, axis, tile_coord(x), adj_dest, adj_t);    \
    }                                                                                                          \
    template <typename T, int M, typename Tile, typename AdjTile>                                              \
    CUDA_CALLABLE inline void adj_tile_store_indexed_##MODE(                                                   \
        array_t<T>& dest, tile_shared_t<int, tile_layout_strided_t<tile_shape_t<M>>>& indices, int axis,      \
        int x, int y, Tile& t, array_t<T>& adj_dest,                                                           \
        tile_shared_t<int, tile_layout_strided_t<tile_shape_t<M>>>& adj_indices, int adj_axis, int adj_x,    \
        int adj_y, AdjTile& adj_t)                                                                             \
    {                                                                                                          \
        tile_store_indexed_adjoint<ZERO, T, M, Tile>(dest, indices, axis, tile_coord(x, y), adj_dest, adj_t); \
    }                                                                                                          \
    template <typename T, int M, typename Tile, typename AdjTile>                                              \
    CUDA_CALLABLE inline void adj_tile_store_indexed_##MODE(                                                   \
        array_t<T>& dest, tile_shared_t<int, tile_layout_strided_t<tile_shape_t<M>>>& indices, int axis,      \
        int x, int y, int z, Tile& t, array_t<T>& adj_dest,                                                    \
        tile_shared_t<int, tile_layout_strided_t<tile_shape_t<M>>>& adj_indices, int adj_axis, int adj_x,    \
        int adj_y, int adj_z, AdjTile& adj_t)                                                                  \
    {                                                                                                          \
        tile_store_indexed_adjoint<ZERO, T, M, Tile>(                                                          \
            dest, indices, axis, tile_coord(x, y, z), adj_dest, adj_t);                                        \
    }

WP_ZS_TILE_STORE_INDEXED_FORMS(zero, true)
WP_ZS_TILE_STORE_INDEXED_FORMS(accumulate, false)
#undef WP_ZS_TILE_STORE_INDEXED_FORMS


// ---------------------------------------------------------------------------------------------------------
// The replay log of a zero_store=True kernel's backward pass (codegen/replay.py writes the calls).
// Warp's backward replays the forward body without its stores, so a load of an element the thread stored
// earlier in the launch would read memory as it is at backward time. In the replay, each store into an array
// the kernel reads back (and every store in a @wp.func helper) is put in the log instead, and loads overlay the
// entries that cover them, newest last. Nothing is written to array memory during the backward pass.
// Each store statement of the generated code has its own slot, numbered at build time in the order of the text
// (which is the order the replay runs them: the forward section, then the reverse one), and a helper's call its
// own range of slots (its variant is a template on the range's first slot, ZsBase, and on the slots its caller's
// loads could see before the call, ZsBelow). So every index below is a
// compile-time constant: a load looks only at the slots of the stores before it, newest first, and the compiler
// keeps the log in registers. An empty slot's address is null.
//   replay_store<S>       puts the value in slot S
//   replay_load<slots<...>>  reads memory, overlaid with the newest slot that covers the element among those the
//                         load may see (listed newest first; a helper's load sees its caller's too, ZsBelow)
//   replay_clear<S>       empties slot S and every later one: a store's (or a helper call's) adjoint first
//                         returns the log to what it was before the store, so every reverse statement sees the
//                         forward's state
//   replay_update<S, slots<...>>  an atomic's store in a backward for memory as the forward left it (POST): only over
//                         an element the thread logged before, whose value is then the atomic's old value; an
//                         element not logged keeps reading memory, which already holds what the forward left there

// Helper variants and log operations are forced inline, so the log stays in the kernel's registers and stack.
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define WP_ZS_INLINE __forceinline__
#elif defined(_MSC_VER)
#define WP_ZS_INLINE __forceinline
#else
#define WP_ZS_INLINE inline __attribute__((always_inline))
#endif
// ... and the rare path of a load that overlays parts of an element is not, so the common one stays small
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define WP_ZS_NOINLINE __noinline__
#elif defined(_MSC_VER)
#define WP_ZS_NOINLINE __declspec(noinline)
#else
#define WP_ZS_NOINLINE __attribute__((noinline))
#endif

template <int Entries, int Slot> struct replay_log
{
    const unsigned char* addr[Entries] = {};  // first byte each slot covers; null: empty
    int size[Entries] = {};                   // bytes each slot covers
    alignas(16) unsigned char data[Entries][Slot];
};

// The largest of the stored types: the size of one entry.
template <typename... T> constexpr int slot_bytes()
{
    int m = 1;
    ((m = (int)sizeof(T) > m ? (int)sizeof(T) : m), ...);
    return m;
}

template <int S, int Entries, int Slot, typename T, typename V>
CUDA_CALLABLE WP_ZS_INLINE void replay_store(replay_log<Entries, Slot>& log, T* p, const V& value)
{
    static_assert(S >= 0 && S < Entries, "warp_zerostore: replay log slot out of range");
    static_assert(sizeof(T) <= Slot, "warp_zerostore: replay log slot too small");
    const T stored = value;
    log.addr[S] = (const unsigned char*)p;
    log.size[S] = (int)sizeof(T);
    memcpy(log.data[S], &stored, sizeof(T));
}

template <int S, int Entries, int Slot> CUDA_CALLABLE WP_ZS_INLINE void replay_clear(replay_log<Entries, Slot>& log)
{
    if constexpr (S < Entries) {
        log.addr[S] = nullptr;
        replay_clear<S + 1>(log);
    }
}

// Every index into the log below is a template argument, and every copy out of it has a constant size, so that
// the compiler keeps the log in registers (an index known only at run time would put it on the stack).
//
// What a load may see is a list of slot descriptors, newest first, written by the code generator: whole<U, K> for
// slot K when it holds a whole array element of type U (a store a[i] = v, an atomic), part<K> when it may hold a
// part of one (a component store a[i].x = v) or what a helper's range holds. Against a load of a whole element of
// type T, a whole<T, K> is either the same element or another one: one comparison; any other may also cover a part
// of it, which the rare merge path puts together.
template <typename U, int K> struct whole
{
};
template <int K> struct part
{
};
template <typename... D> struct slots
{
};

template <typename A, typename B> struct concat;
template <typename... A, typename... B> struct concat<slots<A...>, slots<B...>>
{
    using type = slots<A..., B...>;
};

template <typename A, typename B> struct same_type
{
    static constexpr bool value = false;
};
template <typename A> struct same_type<A, A>
{
    static constexpr bool value = true;
};

template <typename D> struct slot_of;
template <typename U, int K> struct slot_of<whole<U, K>>
{
    static constexpr int index = K;
    template <typename T> static constexpr bool only_whole() { return same_type<U, T>::value; }
};
template <int K> struct slot_of<part<K>>
{
    static constexpr int index = K;
    template <typename T> static constexpr bool only_whole() { return false; }
};

// A slot against the element [lo, lo + sizeof(T)): 0 where it does not touch it, 1 where it is the whole element
// (its value in `value`), 2 where it covers a part of it.
template <typename D, int Entries, int Slot, typename T>
CUDA_CALLABLE WP_ZS_INLINE int replay_probe(const replay_log<Entries, Slot>& log, const unsigned char* lo, T& value)
{
    constexpr int k = slot_of<D>::index;
    static_assert(k >= 0 && k < Entries, "warp_zerostore: replay log slot out of range");
    const unsigned char* a = log.addr[k];
    if (a == lo && log.size[k] == (int)sizeof(T)) {
        memcpy(&value, log.data[k], sizeof(T));
        return 1;
    }
    if constexpr (slot_of<D>::template only_whole<T>()) {
        return 0;
    } else {
        // a part: the slot starts inside the element, or before it and reaches into it (an empty slot, a null
        // address, does neither: its size is that of the store it last held, far below any address)
        const bool inside = (unsigned long long)(a - lo) < (unsigned long long)sizeof(T);
        const bool reaches = (unsigned long long)(lo - a) < (unsigned long long)log.size[k];
        return (inside | reaches) ? 2 : 0;
    }
}

template <typename... D, int Entries, int Slot, typename T>
CUDA_CALLABLE WP_ZS_INLINE int
replay_probe_newest(slots<D...>, const replay_log<Entries, Slot>& log, const unsigned char* lo, T& value)
{
    int found = 0;
    (void)((found = replay_probe<D>(log, lo, value)) || ...);  // the newest first; stops at the first that touches
    return found;
}

// The bytes of the element a slot covers, where no newer slot gave them (`done`).
template <typename D, int Entries, int Slot, int Size>
CUDA_CALLABLE WP_ZS_INLINE void
replay_overlay(const replay_log<Entries, Slot>& log, const unsigned char* lo, unsigned char (&out)[Size], bool (&done)[Size])
{
    constexpr int k = slot_of<D>::index;
    const unsigned char* a = log.addr[k];
    if (a == nullptr || a >= lo + Size || a + log.size[k] <= lo)
        return;
    unsigned char entry[Slot];
    memcpy(entry, log.data[k], Slot);
    for (int b = 0; b < Size; ++b) {
        const long offset = (long)(lo + b - a);
        if (!done[b] && offset >= 0 && offset < log.size[k]) {
            out[b] = entry[offset];
            done[b] = true;
        }
    }
}

// Parts of the element (component stores): each byte from the newest slot that covers it, else from memory. Rare,
// and out of line: the log is passed by value, so that the common path keeps it in registers.
template <typename... D, int Entries, int Slot, typename T>
CUDA_CALLABLE WP_ZS_NOINLINE T replay_merge(slots<D...>, const replay_log<Entries, Slot> log, T* p)
{
    const unsigned char* lo = (const unsigned char*)p;
    unsigned char out[sizeof(T)];
    bool done[sizeof(T)] = {};
    (replay_overlay<D>(log, lo, out, done), ...);
    T value = *p;
    unsigned char memory[sizeof(T)];
    memcpy(memory, &value, sizeof(T));
    for (int b = 0; b < (int)sizeof(T); ++b)
        if (!done[b])
            out[b] = memory[b];
    memcpy(&value, out, sizeof(T));
    return value;
}

template <typename Visible, int Entries, int Slot, typename T>
CUDA_CALLABLE WP_ZS_INLINE T replay_load(const replay_log<Entries, Slot>& log, T* p)
{
    T value;
    const int found = replay_probe_newest(Visible {}, log, (const unsigned char*)p, value);
    if (found == 1)
        return value;
    if (found == 2)
        return replay_merge(Visible {}, log, p);
    return *p;
}

template <int S, typename Visible, int Entries, int Slot, typename T, typename V>
CUDA_CALLABLE WP_ZS_INLINE void replay_update(replay_log<Entries, Slot>& log, T* p, const V& value)
{
    T seen;
    if (replay_probe_newest(Visible {}, log, (const unsigned char*)p, seen))
        replay_store<S>(log, p, value);
}

// ---------------------------------------------------------------------------------------------------------
// Tile maps of a builtin whose adjoint takes its result (Warp <= 1.18)
//
// Warp <= 1.18's tile map calls the element adjoint as adj_op(x, adj_x, adj_ret); tanh, sqrt and cbrt have only
// adj_op(x, ret, adj_x, adj_ret), so wp.tile_map(wp.tanh, t) does not build (1.19 calls the one that exists). A
// module compiles whole, and a flagged kernel builds only if its module does: below, where the installed Warp's
// map cannot call such an adjoint (WP_ZS_TILE_MAP_ADJOINT_DISPATCHES 0), Warp's adjoint map macros are defined
// again for the module, each the same map whose element adjoint is the builtin's without the result where it has
// one, else with the result computed again from the operands (the map's forward value).

template <typename AdjOp, typename Op, typename X, typename AdjX, typename AdjRet>
CUDA_CALLABLE inline auto map_adjoint(AdjOp adj_op, Op, X x, AdjX& adj_x, AdjRet adj_ret, int)
    -> decltype(adj_op(x, adj_x, adj_ret), void())
{
    adj_op(x, adj_x, adj_ret);
}

template <typename AdjOp, typename Op, typename X, typename AdjX, typename AdjRet>
CUDA_CALLABLE inline void map_adjoint(AdjOp adj_op, Op op, X x, AdjX& adj_x, AdjRet adj_ret, long)
{
    adj_op(x, op(x), adj_x, adj_ret);
}

template <typename AdjOp, typename Op, typename X, typename Y, typename AdjX, typename AdjY, typename AdjRet>
CUDA_CALLABLE inline auto map_adjoint(AdjOp adj_op, Op, X x, Y y, AdjX& adj_x, AdjY& adj_y, AdjRet adj_ret, int)
    -> decltype(adj_op(x, y, adj_x, adj_y, adj_ret), void())
{
    adj_op(x, y, adj_x, adj_y, adj_ret);
}

template <typename AdjOp, typename Op, typename X, typename Y, typename AdjX, typename AdjY, typename AdjRet>
CUDA_CALLABLE inline void map_adjoint(AdjOp adj_op, Op op, X x, Y y, AdjX& adj_x, AdjY& adj_y, AdjRet adj_ret, long)
{
    adj_op(x, y, op(x, y), adj_x, adj_y, adj_ret);
}

} // namespace zs
} // namespace wp

#if !WP_ZS_TILE_MAP_ADJOINT_DISPATCHES
// An overload set (wp::adj_tanh) as one object whose call fails softly where no overload takes those arguments.
#define WP_ZS_OVERLOADS(f) [](auto&&... args) -> decltype(f(args...)) { return f(args...); }
#define WP_ZS_MAP_ADJ1(op, adj_op)                                                                                   \
    [](auto x, auto& adj_x, auto adj_ret) {                                                                          \
        wp::zs::map_adjoint(WP_ZS_OVERLOADS(adj_op), [](auto v) { return op(v); }, x, adj_x, adj_ret, 0);            \
    }
#define WP_ZS_MAP_ADJ2(op, adj_op)                                                                                   \
    [](auto x, auto y, auto& adj_x, auto& adj_y, auto adj_ret) {                                                     \
        wp::zs::map_adjoint(                                                                                         \
            WP_ZS_OVERLOADS(adj_op), [](auto u, auto v) { return op(u, v); }, x, y, adj_x, adj_y, adj_ret, 0);       \
    }
#undef adj_tile_unary_map
#undef adj_tile_binary_map
// the arguments of the installed Warp's own macros: a result tile up to 1.10 (WP_ZS_TILE_MAP_TAKES_RESULT)
#if WP_ZS_TILE_MAP_TAKES_RESULT
#define adj_tile_unary_map(op, a, r, adj_op, adj_a, adj_r, adj_ret)                                                  \
    adj_tile_map([](auto x) { return op(x); }, a, WP_ZS_MAP_ADJ1(op, adj_op), adj_a, adj_ret)
#define adj_tile_binary_map(op, a, b, r, adj_op, adj_a, adj_b, adj_r, adj_ret)                                       \
    adj_tile_map([](auto x, auto y) { return op(x, y); }, a, b, WP_ZS_MAP_ADJ2(op, adj_op), adj_a, adj_b, adj_ret)
#else
#define adj_tile_unary_map(op, a, adj_op, adj_a, adj_ret)                                                            \
    adj_tile_map([](auto x) { return op(x); }, a, WP_ZS_MAP_ADJ1(op, adj_op), adj_a, adj_ret)
#define adj_tile_binary_map(op, a, b, adj_op, adj_a, adj_b, adj_ret)                                                 \
    adj_tile_map([](auto x, auto y) { return op(x, y); }, a, b, WP_ZS_MAP_ADJ2(op, adj_op), adj_a, adj_b, adj_ret)
#endif
#endif

#endif // WARP_ZEROSTORE_H
