(* Sample OCaml module for outlines. *)
open Printf

type shape =
  | Circle of float
  | Square of float

exception Invalid of string

(* Its area. *)
let area = function
  | Circle r -> Float.pi *. r *. r
  | Square s -> s *. s

let rec total shapes =
  match shapes with
  | [] -> 0.
  | secret_head :: rest -> area secret_head +. total rest

module Registry = struct
  let shapes = ref []

  let add shape =
    shapes := shape :: !shapes
end

module type PRINTER = sig
  val print : shape -> unit
end

module Printer : PRINTER = struct
  let print shape = printf "%f\n" (area shape)
end

external secret_time : unit -> float = "caml_sys_time"
