// An empty C file: SwiftPM builds the header in include/ into the `robota_swiftFFI` module.
