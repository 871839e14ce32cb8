// While a ShapesOnlyScope is alive on this thread, new tensors are shapes only: nothing is
// allocated, data() is null and fill() does nothing. Planning builds kernel layers only
// to ask their shapes, FLOPs and parameter counts (the model zoo, aux heads); without
// this every weight of a model would be allocated before the "does not fit in memory"
// check could refuse it (gigabytes for a large --width-multiplier). Tensors made in
// the scope must not be read, written or copied: only their shapes are meaningful.
#pragma once

namespace interplace::kernels {

class ShapesOnlyScope {
 public:
  ShapesOnlyScope();
  ~ShapesOnlyScope();
  ShapesOnlyScope(const ShapesOnlyScope&) = delete;
  ShapesOnlyScope& operator=(const ShapesOnlyScope&) = delete;

 private:
  bool previous_;
};

}  // namespace interplace::kernels
