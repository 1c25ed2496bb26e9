// bubblesim_h5_dump FILE.h5: every group, attribute and dataset of an HDF5 file as text, in name
// order, values in full precision, for the golden check (tests/golden/check.sh). Debian's HDF5
// package has no h5dump in the -dev package; this prints just what the check compares.
#include <hdf5.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

// Prints one value of memory type `type` at `data`.
void print_value(hid_t type, const unsigned char* data) {
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: {
      const std::size_t size = H5Tget_size(type);
      const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
      std::int64_t s = 0;
      std::uint64_t u = 0;
      if (size == 1) {
        s = *reinterpret_cast<const std::int8_t*>(data);
        u = *data;
      } else if (size == 2) {
        std::int16_t v;
        std::memcpy(&v, data, 2);
        s = v;
        u = static_cast<std::uint16_t>(v);
      } else if (size == 4) {
        std::int32_t v;
        std::memcpy(&v, data, 4);
        s = v;
        u = static_cast<std::uint32_t>(v);
      } else {
        std::memcpy(&s, data, 8);
        std::memcpy(&u, data, 8);
      }
      if (is_signed) {
        std::printf("%" PRId64, s);
      } else {
        std::printf("%" PRIu64, u);
      }
      return;
    }
    case H5T_FLOAT: {
      double v = 0;
      if (H5Tget_size(type) == 4) {
        float f;
        std::memcpy(&f, data, 4);
        v = f;
      } else {
        std::memcpy(&v, data, 8);
      }
      std::printf("%.17g", v);
      return;
    }
    case H5T_STRING: {
      if (H5Tis_variable_str(type) > 0) {
        const char* s;
        std::memcpy(&s, data, sizeof s);
        std::printf("\"%s\"", s != nullptr ? s : "");
      } else {
        const std::size_t n = H5Tget_size(type);
        std::printf("\"%s\"", std::string(reinterpret_cast<const char*>(data),
                                          strnlen(reinterpret_cast<const char*>(data), n))
                                  .c_str());
      }
      return;
    }
    case H5T_ENUM: {
      char name[256];
      if (H5Tenum_nameof(type, data, name, sizeof name) >= 0) {
        std::printf("%s", name);
      } else {
        std::printf("?");
      }
      return;
    }
    case H5T_COMPOUND: {
      const int n = H5Tget_nmembers(type);
      std::printf("{");
      for (int i = 0; i < n; ++i) {
        char* name = H5Tget_member_name(type, static_cast<unsigned>(i));
        const hid_t member = H5Tget_member_type(type, static_cast<unsigned>(i));
        std::printf("%s%s=", i == 0 ? "" : ", ", name);
        print_value(member, data + H5Tget_member_offset(type, static_cast<unsigned>(i)));
        H5Tclose(member);
        H5free_memory(name);
      }
      std::printf("}");
      return;
    }
    case H5T_ARRAY: {
      const hid_t base = H5Tget_super(type);
      const std::size_t count = H5Tget_size(type) / H5Tget_size(base);
      std::printf("[");
      for (std::size_t i = 0; i < count; ++i) {
        if (i != 0) std::printf(", ");
        print_value(base, data + i * H5Tget_size(base));
      }
      std::printf("]");
      H5Tclose(base);
      return;
    }
    default:
      std::printf("<class %d>", static_cast<int>(H5Tget_class(type)));
  }
}

// Prints `count` values read by `read` into a buffer of memory type `mem`, one a line.
template <typename Read>
void print_values(hid_t file_type, hid_t space, hsize_t count, const char* indent, Read read) {
  const hid_t mem = H5Tget_native_type(file_type, H5T_DIR_ASCEND);
  const std::size_t size = H5Tget_size(mem);
  std::vector<unsigned char> buffer(size * count + 1);
  if (read(mem, buffer.data()) < 0) {
    std::printf("%s<unreadable>\n", indent);
  } else {
    for (hsize_t i = 0; i < count; ++i) {
      std::printf("%s", indent);
      print_value(mem, buffer.data() + i * size);
      std::printf("\n");
    }
    H5Dvlen_reclaim(mem, space, H5P_DEFAULT, buffer.data());
  }
  H5Tclose(mem);
}

herr_t print_attribute(hid_t object, const char* name, const H5A_info_t*, void*) {
  const hid_t attribute = H5Aopen(object, name, H5P_DEFAULT);
  const hid_t type = H5Aget_type(attribute);
  const hid_t space = H5Aget_space(attribute);
  const hssize_t count = H5Sget_simple_extent_npoints(space);
  std::printf("  @%s (%lld):\n", name, static_cast<long long>(count));
  print_values(type, space, static_cast<hsize_t>(count), "    ",
               [&](hid_t mem, void* buffer) { return H5Aread(attribute, mem, buffer); });
  H5Sclose(space);
  H5Tclose(type);
  H5Aclose(attribute);
  return 0;
}

herr_t print_object(hid_t root, const char* name, const H5O_info_t* info, void*) {
  std::printf("%s %s\n", info->type == H5O_TYPE_GROUP ? "group" : "dataset", name);
  const hid_t object = H5Oopen(root, name, H5P_DEFAULT);
  H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_INC, nullptr, print_attribute, nullptr);
  if (info->type == H5O_TYPE_DATASET) {
    const hid_t type = H5Dget_type(object);
    const hid_t space = H5Dget_space(object);
    const hssize_t count = H5Sget_simple_extent_npoints(space);
    std::printf("  rows %lld\n", static_cast<long long>(count));
    print_values(type, space, static_cast<hsize_t>(count), "  ", [&](hid_t mem, void* buffer) {
      return H5Dread(object, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer);
    });
    H5Sclose(space);
    H5Tclose(type);
  }
  H5Oclose(object);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: bubblesim_h5_dump FILE.h5\n");
    return 2;
  }
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const hid_t file = H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) {
    std::fprintf(stderr, "bubblesim_h5_dump: cannot open %s\n", argv[1]);
    return 2;
  }
  H5Ovisit(file, H5_INDEX_NAME, H5_ITER_INC, print_object, nullptr);
  H5Fclose(file);
  return 0;
}
