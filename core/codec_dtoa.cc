/* codec_dtoa.cc — the shortest round-trip digits of a double, from Google's
 * double-conversion (Debian's libdouble-conversion-dev: Grisu3 with an
 * exact bignum fallback). The one file that includes its header; the JSON
 * encoder (codec.c put_f64) lays the digits out itself, in the %g form it
 * has always printed.
 *
 * Why a library: the encoder used to try %.15g, %.16g and %.17g in turn
 * with a strtod each to find the shortest that reads back, which was ~7%
 * of a Kafka → Kafka job's CPU when its floats have many digits
 * (bench/BASELINE.md, "W1 CPU per record"); a shortest-digits algorithm
 * does it in one pass, and a well-kept one beats writing Ryu by hand. */
#include <double-conversion/double-to-string.h>

extern "C" int sv_codec_dtoa_shortest(double v, char *digits, int *point,
				      int *negative) noexcept;

/* v: finite. Writes its shortest round-trip digits into digits (at least
 * SV_DTOA_DIGITS_MAX + 1 = 18 bytes, NUL-terminated; no leading zeros, the
 * closest to v among the shortest), the decimal exponent into *point
 * (v = 0.digits * 10^point) and the sign into *negative (1 for -0.0 too).
 * Returns the number of digits (1..17). thread: any. */
extern "C" int sv_codec_dtoa_shortest(double v, char *digits, int *point,
				      int *negative) noexcept
{
	using double_conversion::DoubleToStringConverter;
	bool sign = false;
	int length = 0;
	DoubleToStringConverter::DoubleToAscii(
		v, DoubleToStringConverter::SHORTEST, 0, digits,
		DoubleToStringConverter::kBase10MaximalLength + 1, &sign,
		&length, point);
	*negative = sign ? 1 : 0;
	return length;
}
