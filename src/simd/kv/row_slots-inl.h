// The slots of one ISA: included after kv/row_kernels-inl.h. Each kernel tries the architectures
// As... widest first (all compiled in this ISA's file) and falls back to its scalar twin when no
// vector width fits the row.

template <class C, class First, class... Rest>
void dot_pick(const DotArgs& a) {
  if (fits<First, C>(a.n)) dot_rows<First, C>(a);
  else if constexpr (sizeof...(Rest) > 0) dot_pick<C, Rest...>(a);
  else scalar::dot<C>(a);
}

template <class F, class First, class... Rest>
void dot_channel_pick(const DotArgs& a) {
  if (fits<First, F>(a.n)) dot_channel_rows<First, F>(a);
  else if constexpr (sizeof...(Rest) > 0) dot_channel_pick<F, Rest...>(a);
  else scalar::dot_channel<F>(a);
}

template <class First, class... Rest>
void acc_pick(const AccArgs& a) {
  if (fits<First, F32Rows>(a.n)) acc_rows<First, F32Rows>(a);
  else if constexpr (sizeof...(Rest) > 0) acc_pick<Rest...>(a);
  else scalar::acc(a);
}

template <class F, class First, class... Rest>
void quantize_pick(const float* x, int n, int group, uint8_t* row) {
  if (!fits_quantize<First, F>(group)) {
    if constexpr (sizeof...(Rest) > 0) quantize_pick<F, Rest...>(x, n, group, row);
    else scalar::quantize<F>(x, n, group, row);
  } else if constexpr (F::kCodebook) {
    quantize_row_q4n<First>(x, n, group, row);
  } else {
    quantize_row<First, F>(x, n, group, row);
  }
}

// The row kernels (FP32 rows, and the channel-axis key tiles of every format, whose code rows
// are rows) and quantizers of this ISA's rung. The tile kernels of each format (dot, acc,
// dequantize_tile) are not among them: they come from the ISA's integer-kernel file, or stay as the
// rung below left them.
template <class First, class... Rest>
void install_rows(Kernels& t) {
  t.dot = dot_pick<F32Rows, First, Rest...>;
  t.acc = acc_pick<First, Rest...>;
  t.exp_sum = exp_sum_impl<First>;
  t.swiglu = swiglu_impl<First>;
  t.geglu = geglu_impl<First>;
  t.hadamard = hadamard_impl<First>;
  t.gemm = gemm_impl<First>;  // rows are a multiple of kGemmRows, of every width's lanes
  t.softmax = softmax_impl<First>;
  kv::for_each_quant_format([&](auto f) {
    using F = decltype(f);
    FormatKernels& k = t.format[static_cast<int>(F::kFormat)];
    k.dot_channel = dot_channel_pick<F, First, Rest...>;
    k.quantize = quantize_pick<F, First, Rest...>;
  });
}
